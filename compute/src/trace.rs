//! NVTX ranges, so that `nsys profile --trace=cuda,nvtx showdown duel …` shows the lab's
//! epochs, steps and their phases (forward, backward, optimizer, evaluation) above the CUDA
//! kernels on its timeline. NVTX calls do nothing until a tool such as Nsight Systems is
//! attached; without the `cuda` feature they are not compiled at all.

/// An open NVTX range, closed when dropped (ranges nest per thread).
#[must_use = "the range closes when this guard is dropped"]
pub struct Range(());

/// Opens a range named `name` on this thread.
pub fn range(name: &str) -> Range {
    #[cfg(feature = "cuda")]
    nvtx::range_push!("{}", name);
    #[cfg(not(feature = "cuda"))]
    let _ = name;
    Range(())
}

impl Drop for Range {
    fn drop(&mut self) {
        #[cfg(feature = "cuda")]
        nvtx::range_pop!();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_nest_and_close_without_a_tool_attached() {
        let outer = super::range("epoch 1 (fp32)");
        {
            let _inner = super::range("step");
        }
        drop(outer);
    }
}
