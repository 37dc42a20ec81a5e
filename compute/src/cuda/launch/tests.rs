//! Tests of `launch`.

use super::*;

const H100_SMS: usize = 132;
const H100_SMEM: usize = 227 * 1024;

#[test]
fn lab_layers_get_two_blocks_per_sm_within_limits() {
    let conv2 = ConvShape {
        c_in: 32,
        c_out: 64,
        h: 13,
        w: 13,
        k: 3,
    };
    let p = ConvFwdPlan::choose(128, conv2, H100_SMS, H100_SMEM).unwrap();
    assert_eq!(p.cpb % CONV_FWD_COG, 0);
    assert!(128 * 64usize.div_ceil(p.cpb) >= 2 * H100_SMS, "{p:?}");
    assert!(
        p.threads >= 32 && p.threads <= 1024 && p.threads.is_multiple_of(32),
        "{p:?}"
    );
    assert_eq!(p.smem_bytes, 4 * (32 * 169 + 32 * 9 * p.cpb));
    let conv1 = ConvShape {
        c_in: 1,
        c_out: 32,
        h: 28,
        w: 28,
        k: 3,
    };
    let p = ConvFwdPlan::choose(128, conv1, H100_SMS, H100_SMEM).unwrap();
    assert!(p.smem_bytes < 48 * 1024, "{p:?}");
    // One image on a big GPU: all channels in one block, never below one warp of work.
    let p = ConvFwdPlan::choose(1, conv2, H100_SMS, H100_SMEM).unwrap();
    assert!(25 * p.cpb / CONV_FWD_COG >= 32, "{p:?}");
}

#[test]
fn a_layer_too_big_for_shared_memory_is_an_error() {
    let huge = ConvShape {
        c_in: 64,
        c_out: 64,
        h: 200,
        w: 200,
        k: 3,
    };
    let e = ConvFwdPlan::choose(8, huge, H100_SMS, H100_SMEM).unwrap_err();
    assert!(e.to_string().contains("shared memory"), "{e}");
}

#[test]
fn an_int_argument_out_of_range_is_an_error_naming_the_kernel_and_value() {
    let k = "dense_fwd_f16";
    assert_eq!(int(k, "n", 7).unwrap(), 7);
    assert_eq!(int(k, "n", i32::MAX as usize).unwrap(), i32::MAX);
    let e = int(k, "n", 1 << 31).unwrap_err().to_string();
    assert!(
        e.contains("dense_fwd_f16") && e.contains("n = 2147483648"),
        "{e}"
    );
    assert_eq!(long(k, "len", 1 << 40).unwrap(), 1 << 40);
    let e = dim(k, "grid.x", 1 << 32).unwrap_err().to_string();
    assert!(e.contains("dense_fwd_f16") && e.contains("grid.x"), "{e}");
}

#[test]
fn entry_points_name_their_dtype() {
    assert_eq!(dtype_of("dense_fwd_f16"), Some("f16"));
    assert_eq!(dtype_of("conv_mma_fwd_tf32"), Some("tf32"));
    assert_eq!(dtype_of("cast_from_f32_bf16"), Some("bf16"));
    assert_eq!(dtype_of("cursor_advance"), None);
}

#[test]
fn a_fused_launch_sums_its_tensors() {
    let mut tt = TensorTable::default();
    assert_eq!(tt.set_ends([3, 0, 5].into_iter()).unwrap(), 8);
    assert_eq!((tt.end[..3].to_vec(), tt.count), (vec![3, 3, 8], 3));
    assert!(TensorTable::default().set_ends([0].into_iter()).is_err());
    assert!(TensorTable::default().set_ends(std::iter::empty()).is_err());
}

#[test]
fn grid_stride_launches_cover_the_work_within_the_cap() {
    let c = grid_stride(10 * THREADS as usize + 1, 1000);
    assert_eq!((c.grid_dim.0, c.block_dim.0), (11, THREADS));
    assert_eq!(grid_stride(0, 1000).grid_dim.0, 1);
    assert_eq!(grid_stride(1 << 40, 132 * 16).grid_dim.0, 132 * 16);
}
