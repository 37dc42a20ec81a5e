//! The kernel benchmark job: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed at the chosen shape against the copy ceiling measured in the same job,
//! with PyTorch eager and `torch.compile` (`anchor_kernels.py`) beside them when asked for and
//! found. `showdown bench kernels` and the app's Act III run this same function.

use crate::bench::kernels::{parse_peer_ops, KernelsBench, LabDtype, Op};
use crate::error::{ComputeError, Result};
use crate::protocol::KernelBenchRequest;

use super::LabJob;

/// The largest matrix the job accepts (elements): 2³⁰, 4 GiB in f32 per buffer.
pub const MAX_ELEMENTS: usize = 1 << 30;

/// Checks a request's fields, naming the first that is wrong.
pub fn validate(req: &KernelBenchRequest) -> Result<()> {
    if req.rows == 0 || req.cols == 0 {
        return Err(ComputeError::bad_arg(
            "rows/cols",
            format!("{}×{}", req.rows, req.cols),
            "must be at least 1",
        ));
    }
    if req.rows.saturating_mul(req.cols) > MAX_ELEMENTS {
        return Err(ComputeError::bad_arg(
            "rows/cols",
            format!("{}×{}", req.rows, req.cols),
            format!("at most {MAX_ELEMENTS} elements"),
        ));
    }
    if req.reps == 0 || req.reps > 10_000 {
        return Err(ComputeError::bad_arg(
            "reps",
            req.reps,
            "must be 1 to 10000",
        ));
    }
    if req.ops.is_empty() || req.dtypes.is_empty() {
        return Err(ComputeError::bad_arg(
            "ops/dtypes",
            "",
            "name at least one op and one dtype",
        ));
    }
    Ok(())
}

/// PyTorch's name of our op in `anchor_kernels.py` (`layernorm_gelu` is `ln_gelu` there).
fn peer_op_name(op: Op) -> &'static str {
    match op {
        Op::LayernormGelu => "ln_gelu",
        other => other.name(),
    }
}

/// The arguments of `anchor_kernels.py` for this request's kernels.
pub fn peer_args(req: &KernelBenchRequest) -> Vec<String> {
    let ops: Vec<&str> = req.ops.iter().map(|&o| peer_op_name(o)).collect();
    let dtypes: Vec<&str> = req
        .dtypes
        .iter()
        .map(|d| match d {
            LabDtype::F32 => "float32",
            LabDtype::F16 => "float16",
        })
        .collect();
    vec![
        "--part".into(),
        "kernels".into(),
        "--rows".into(),
        req.rows.to_string(),
        "--cols".into(),
        req.cols.to_string(),
        "--ops".into(),
        ops.join(","),
        "--dtypes".into(),
        dtypes.join(","),
    ]
}

/// Runs the benchmark on GPU `ordinal`; `python` runs the peer when `req.peers` is set and a
/// CUDA-enabled torch was found there (else `None`, and the report says why in
/// `peer_failure`).
#[cfg(feature = "cuda")]
pub fn run_kernel_bench(
    req: &KernelBenchRequest,
    ordinal: usize,
    python: Option<&str>,
    job: &mut LabJob<'_>,
) -> Result<KernelsBench> {
    use crate::bench::kernels::KernelsOurs;
    use crate::cuda::lab::{KernelLab, CHECK_SHAPES};
    validate(req)?;
    let lab = KernelLab::new(ordinal)?;
    job.watch_gpu(ordinal);
    let checks_total = req.ops.len() * req.dtypes.len() * CHECK_SHAPES.len();
    let mut checks = Vec::new();
    for &op in &req.ops {
        for &dt in &req.dtypes {
            job.stage(
                format!("checking {} {} against f64", op.name(), dt.suffix()),
                checks.len(),
                checks_total,
            )?;
            for [r, c] in CHECK_SHAPES {
                checks.push(lab.check(op, dt, r, c)?);
            }
        }
    }
    let rows_total = 1 + req.ops.len() * req.dtypes.len();
    let mut done = 0;
    let bench = lab.bench_some(
        req.rows,
        req.cols,
        req.reps,
        &req.ops,
        &req.dtypes,
        &mut |what| {
            let r = job.stage(format!("timing {what}"), done, rows_total);
            done += 1;
            r
        },
    )?;
    let device = lab.device.clone();
    drop(lab);
    let (peers, peer_failure) = peer_rows(req, python, job)?;
    Ok(KernelsBench {
        ours: KernelsOurs {
            device,
            checks,
            bench,
        },
        peers,
        peer_failure,
    })
}

/// The peer's rows for `req`, or why there are none.
#[cfg(feature = "cuda")]
fn peer_rows(
    req: &KernelBenchRequest,
    python: Option<&str>,
    job: &mut LabJob<'_>,
) -> Result<(Vec<crate::bench::kernels::PeerOp>, Option<String>)> {
    if !req.peers {
        return Ok((Vec::new(), None));
    }
    let Some(python) = python else {
        return Ok((
            Vec::new(),
            Some("no Python with a CUDA-enabled PyTorch was found (see the peer setting)".into()),
        ));
    };
    Ok(
        match super::peers::run(
            python,
            super::peers::PeerScript::AnchorKernels,
            &peer_args(req),
            job,
        )? {
            Ok(out) => (parse_peer_ops(&out), None),
            Err(why) => (Vec::new(), Some(why)),
        },
    )
}

/// Without the CUDA backend there are no kernels to time.
#[cfg(not(feature = "cuda"))]
pub fn run_kernel_bench(
    req: &KernelBenchRequest,
    _ordinal: usize,
    _python: Option<&str>,
    _job: &mut LabJob<'_>,
) -> Result<KernelsBench> {
    validate(req)?;
    let _ = parse_peer_ops;
    Err(super::needs_gpu(
        "the kernel benchmark",
        "this build has no CUDA backend",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_shape_or_rep_count_is_named() {
        let mut r = KernelBenchRequest {
            rows: 0,
            ..KernelBenchRequest::default()
        };
        assert!(validate(&r).unwrap_err().to_string().contains("rows/cols"));
        r.rows = 1 << 20;
        r.cols = 1 << 20;
        assert!(validate(&r).unwrap_err().to_string().contains("elements"));
        r.cols = 4;
        r.reps = 0;
        assert!(validate(&r).unwrap_err().to_string().contains("reps"));
        r.reps = 5;
        r.ops.clear();
        assert!(validate(&r).unwrap_err().to_string().contains("ops"));
    }

    #[test]
    fn the_peer_is_asked_for_the_same_shape_ops_and_dtypes() {
        let r = KernelBenchRequest {
            rows: 64,
            cols: 1000,
            ops: vec![Op::Relu, Op::LayernormGelu],
            dtypes: vec![LabDtype::F16],
            ..KernelBenchRequest::default()
        };
        assert_eq!(
            peer_args(&r).join(" "),
            "--part kernels --rows 64 --cols 1000 --ops relu,ln_gelu --dtypes float16"
        );
    }
}
