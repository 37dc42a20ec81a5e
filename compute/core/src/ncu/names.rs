//! Short kernel names from ncu's demangled (or mangled) function names.

/// The short name of a kernel: the function's own identifier without return type,
/// namespaces, template arguments or parameters.
///
/// `void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)` →
/// `vectorized_elementwise_kernel`; `fused_relu` → `fused_relu`; an Itanium-mangled
/// `_ZN2at6native6kernelEv` → `kernel`. When nothing sensible is left, the trimmed full name.
pub fn short_name(full: &str) -> String {
    let name = full.trim();
    if let Some(s) = demangle_itanium_identifier(name) {
        return s;
    }
    let cleaned = name.replace("(anonymous namespace)", "<unnamed>");
    let head = function_head(&cleaned);
    let no_templates = strip_templates(head);
    // The return type and qualifiers are separated by spaces at depth 0.
    let last_word = no_templates
        .split_whitespace()
        .rev()
        .find(|w| !matches!(*w, "const" | "volatile" | "&" | "&&" | "*"))
        .unwrap_or("");
    let ident = last_word.rsplit("::").next().unwrap_or("");
    let ident = ident.trim_matches(|c: char| c == '*' || c == '&');
    if ident.is_empty() {
        name.to_string()
    } else {
        ident.to_string()
    }
}

/// The part of a demangled name before its parameter list: up to the first `(` outside
/// template arguments and brackets.
fn function_head(name: &str) -> &str {
    let mut depth: usize = 0;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '[' => depth += 1,
            '>' | ']' => depth = depth.saturating_sub(1),
            '(' if depth == 0 => {
                if i == 0 {
                    return name;
                }
                return &name[..i];
            }
            _ => {}
        }
    }
    name
}

/// Removes everything inside (outermost) `<...>`, keeping the brackets' surroundings.
fn strip_templates(head: &str) -> String {
    let mut out = String::with_capacity(head.len());
    let mut depth: usize = 0;
    for c in head.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The last identifier of an Itanium-mangled name (`_Z10vector_addPfS_` → `vector_add`,
/// `_ZN2at6native6kernelEv` → `kernel`), or `None` when the name is not mangled that way.
fn demangle_itanium_identifier(name: &str) -> Option<String> {
    let rest = name.strip_prefix("_Z")?;
    let bytes = rest.as_bytes();
    let mut i = 0;
    let nested = bytes.first() == Some(&b'N');
    if nested {
        i += 1;
        // CV-qualifiers of a member function.
        while i < bytes.len() && matches!(bytes[i], b'K' | b'V' | b'r') {
            i += 1;
        }
    } else if bytes.first() == Some(&b'L') {
        i += 1;
    }
    let mut last: Option<&str> = None;
    loop {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            break;
        }
        let len: usize = rest.get(start..i)?.parse().ok()?;
        let ident = rest.get(i..i.checked_add(len)?)?;
        last = Some(ident);
        i += len;
        if !nested {
            break;
        }
        // Skip template arguments of this component (`I...E`): give up on the rest.
        if bytes.get(i) == Some(&b'I') {
            break;
        }
    }
    let ident = last?;
    if ident.starts_with("_GLOBAL__N") {
        return None;
    }
    Some(ident.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        let cases = [
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)",
                "vectorized_elementwise_kernel",
            ),
            ("fused_relu", "fused_relu"),
            ("relu_f32", "relu_f32"),
            (
                "void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float, 4, void templates::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void templates::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32_10 *) (instance 2)]>(long, at::PhiloxCudaState, T3, T4)",
                "distribution_elementwise_grid_stride_kernel",
            ),
            (
                "void generate_seed_pseudo<rng_config<curandStateXORWOW, 101>>(unsigned long long, unsigned long long, unsigned long long, curandOrdering, curandStateXORWOW *, unsigned int *)",
                "generate_seed_pseudo",
            ),
            (
                "void cub::DeviceReduceKernel<cub::policy_hub<float, unsigned int, cuda::plus<void>>::Policy1000, const float *, float *, unsigned int, cuda::plus<void>, float>(T2, T3, T4, GridEvenShare<T4>, T5)",
                "DeviceReduceKernel",
            ),
            ("(anonymous namespace)::my_kernel(float*)", "my_kernel"),
            ("kernel(float const*, float*)", "kernel"),
            ("_Z10vector_addPfS_", "vector_add"),
            ("_ZN2at6native6kernelEv", "kernel"),
            ("<b>bold</b>", "bold"),
            ("", ""),
        ];
        for (full, short) in cases {
            assert_eq!(short_name(full), short, "{full}");
        }
    }
}
