//! The kernel benchmark job: the activation and norm kernels checked against f64 on awkward
//! shapes, then timed at the chosen shape against the copy ceiling measured in the same job,
//! with PyTorch eager, `torch.compile` and our kernels hand-written in Triton (`anchor_kernels.py`,
//! which runs `triton_kernels.py` beside it) when asked for and found. `showdown bench kernels`
//! and the app's Act III run this same function.

use crate::bench::kernels::{parse_peer_ops, parse_triton_note, KernelsBench, LabDtype, Op};
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
    let peer = peer_rows(req, python, job)?;
    Ok(KernelsBench {
        ours: KernelsOurs {
            device,
            checks,
            bench,
        },
        peers: peer.rows,
        peer_failure: peer.failure,
        triton_failure: peer.triton_failure,
    })
}

/// What the peer gave: its rows (eager, `torch.compile`, Triton), or why there are none, and
/// why its Triton column is absent if it ran without one.
#[derive(Debug, Default, PartialEq)]
pub struct PeerRows {
    /// The op rows.
    pub rows: Vec<crate::bench::kernels::PeerOp>,
    /// Why the peer did not run.
    pub failure: Option<String>,
    /// Why the peer ran without its Triton column.
    pub triton_failure: Option<String>,
}

impl PeerRows {
    /// The rows of the peer's standard output `out`.
    pub fn of_output(out: &str) -> Self {
        PeerRows {
            rows: parse_peer_ops(out),
            failure: None,
            triton_failure: parse_triton_note(out),
        }
    }
}

/// The peer's rows for `req`, or why there are none.
#[cfg(feature = "cuda")]
fn peer_rows(
    req: &KernelBenchRequest,
    python: Option<&str>,
    job: &mut LabJob<'_>,
) -> Result<PeerRows> {
    if !req.peers {
        return Ok(PeerRows::default());
    }
    let Some(python) = python else {
        return Ok(PeerRows {
            failure: Some(
                "no Python with a CUDA-enabled PyTorch was found (see the peer setting)".into(),
            ),
            ..PeerRows::default()
        });
    };
    Ok(
        match super::peers::run(
            python,
            super::peers::PeerScript::AnchorKernels,
            &peer_args(req),
            job,
        )? {
            Ok(out) => PeerRows::of_output(&out),
            Err(why) => PeerRows {
                failure: Some(why),
                ..PeerRows::default()
            },
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

    /// Issue 29: the peer's Triton rows (one failed check among them) and its note on a missing
    /// Triton column are both read from its output.
    #[test]
    fn the_peer_output_gives_the_triton_rows_or_why_they_are_absent() {
        let out = r#"{"kind": "ceiling", "name": "d2d_copy_1GiB", "ms": 0.7, "gbps": 3000}
{"kind": "op", "impl": "torch-eager", "op": "relu", "dtype": "float32", "shape": [64, 1000], "ms": 0.01, "gbps": 51.2}
{"kind": "op", "impl": "triton", "op": "relu", "dtype": "float32", "shape": [64, 1000], "ms": 0.01, "gbps": 51.0, "check": "ok", "max_abs": 0.0, "max_rel": 0.0, "bound": 2e-05, "worst_shape": [1, 1], "checked_shapes": 6}
{"kind": "op", "impl": "triton", "op": "ln_gelu", "dtype": "float32", "shape": [64, 1000], "check": "failed", "max_abs": 0.5, "max_rel": 0.2, "bound": 2e-05, "worst_shape": [7, 4097], "checked_shapes": 9}"#;
        let p = PeerRows::of_output(out);
        assert_eq!(p.rows.len(), 3, "{:?}", p.rows);
        assert!(p.rows[2].check_failed() && !p.rows[1].check_failed());
        assert_eq!((p.failure, p.triton_failure), (None, None));
        let none = PeerRows::of_output(
            r#"{"kind": "note", "impl": "triton", "note": "the Triton column is absent: import triton failed (ModuleNotFoundError: No module named 'triton')"}"#,
        );
        assert!(none.rows.is_empty());
        assert!(none
            .triton_failure
            .is_some_and(|n| n.contains("No module named 'triton'")));
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
