//! Tests of `occupancy`.

use super::*;

fn sm90() -> GpuLimits {
    GpuLimits::for_cc(9, 0).unwrap()
}

fn input(threads: u32, regs: u32, smem: u32) -> OccupancyInput {
    OccupancyInput {
        threads_per_block: threads,
        registers_per_thread: regs,
        shared_mem_per_block: smem,
        carveout_pct: None,
    }
}

fn occ(limits: &GpuLimits, threads: u32, regs: u32, smem: u32) -> OccupancyOutput {
    occupancy(limits, &input(threads, regs, smem)).unwrap()
}

#[test]
fn every_listed_cc_has_limits() {
    for (major, minor) in SUPPORTED_COMPUTE_CAPABILITIES {
        let limits = GpuLimits::for_cc(major, minor).unwrap();
        assert!(limits.check().is_ok());
        let opts = &limits.carveout_options_kb;
        assert!(opts.windows(2).all(|w| w[0] < w[1]), "{opts:?}");
        assert_eq!(
            opts.last().copied(),
            Some(limits.max_shared_memory_per_sm / KB)
        );
        // The opt-in maximum plus the reserve fits in the largest carveout.
        assert!(
            limits.max_shared_memory_per_block_optin + limits.reserved_shared_memory_per_block
                <= limits.max_shared_memory_per_sm
        );
    }
    assert_eq!(
        GpuLimits::for_cc(8, 5),
        Err(OccupancyError::UnsupportedComputeCapability { major: 8, minor: 5 })
    );
    assert!(GpuLimits::for_cc(3, 5).is_err());
}

#[test]
fn sm90_table_values() {
    let l = sm90();
    assert_eq!(l.max_warps_per_sm, 64);
    assert_eq!(l.max_blocks_per_sm, 32);
    assert_eq!(l.max_shared_memory_per_sm, 228 * 1024);
    assert_eq!(l.max_shared_memory_per_block_optin, 227 * 1024);
    assert_eq!(l.shared_memory_allocation_unit, 128);
    assert_eq!(l.reserved_shared_memory_per_block, 1024);
    assert_eq!(
        l.carveout_options_kb,
        vec![0, 8, 16, 32, 64, 100, 132, 164, 196, 228]
    );
    assert_eq!(l.sm_name(), "sm_90");
}

#[test]
fn registers_limit_256_threads_64_regs() {
    // 64 regs × 32 = 2048 per warp → 8 warps per 16,384-register sub-partition → 32 warps
    // → 4 blocks of 8 warps = 32 warps = 50 %.
    let o = occ(&sm90(), 256, 64, 4096);
    assert_eq!(o.warps_per_block, 8);
    assert_eq!(o.blocks_by_warps, 8);
    assert_eq!(o.blocks_by_registers, Some(4));
    // 4096 + 1024 reserved = 5120 (a multiple of 128); 233,472 / 5120 = 45.
    assert_eq!(o.shared_memory_per_block, 5120);
    assert_eq!(o.blocks_by_shared_memory, Some(45));
    assert_eq!(o.blocks_by_max_blocks, 32);
    assert_eq!(o.active_blocks_per_sm, 4);
    assert_eq!(o.active_warps_per_sm, 32);
    assert_eq!(o.occupancy_pct, 50.0);
    assert_eq!(o.limiters, vec![Limiter::Registers]);
    assert_eq!(o.registers_per_block, 2048 * 8);
    // 4 × 5120 = 20 KB → the 32 KB carveout keeps 4 blocks.
    assert_eq!(o.carveout_bytes, 32 * 1024);
    assert!(o.notes.is_empty(), "{:?}", o.notes);
}

#[test]
fn full_occupancy_1024_threads_32_regs() {
    let o = occ(&sm90(), 1024, 32, 0);
    assert_eq!(o.blocks_by_warps, 2);
    assert_eq!(o.blocks_by_registers, Some(2));
    assert_eq!(o.active_blocks_per_sm, 2);
    assert_eq!(o.active_warps_per_sm, 64);
    assert_eq!(o.occupancy_pct, 100.0);
    assert_eq!(o.limiters, vec![Limiter::Warps, Limiter::Registers]);
    // Even with no user shared memory the 1 KB reserve counts.
    assert_eq!(o.shared_memory_per_block, 1024);
    assert_eq!(o.blocks_by_shared_memory, Some(228));
    assert_eq!(o.carveout_bytes, 8 * 1024);
}

#[test]
fn max_registers_128_threads() {
    // 255 × 32 = 8160 → 8192 per warp → 2 warps per sub-partition → 8 warps → 2 blocks.
    let o = occ(&sm90(), 128, 255, 0);
    assert_eq!(o.blocks_by_registers, Some(2));
    assert_eq!(o.registers_per_block, 8192 * 4);
    assert_eq!(o.active_blocks_per_sm, 2);
    assert_eq!(o.active_warps_per_sm, 8);
    assert_eq!(o.occupancy_pct, 12.5);
    assert_eq!(o.limiters, vec![Limiter::Registers]);
}

#[test]
fn register_rounding_is_per_sub_partition_not_per_sm() {
    // 40 regs → 1280 per warp: 65,536 / 1280 = 51 warps if the file were one pool, but
    // floor(16,384 / 1280) = 12 per sub-partition → 48 warps → 12 blocks of 4 warps.
    let o = occ(&sm90(), 128, 40, 0);
    assert_eq!(o.blocks_by_registers, Some(12));
    assert_eq!(o.active_warps_per_sm, 48);
    assert_eq!(o.occupancy_pct, 75.0);
}

#[test]
fn shared_memory_limit_100kb() {
    // 100 KB + 1 KB = 103,424 B (already a multiple of 128) → 233,472 / 103,424 = 2.
    let o = occ(&sm90(), 128, 32, 100 * 1024);
    assert_eq!(o.shared_memory_per_block, 103_424);
    assert_eq!(o.blocks_by_shared_memory, Some(2));
    assert_eq!(o.active_blocks_per_sm, 2);
    assert_eq!(o.limiters, vec![Limiter::SharedMemory]);
    assert_eq!(o.occupancy_pct, 12.5);
    // 2 × 103,424 = 206,848 B > 196 KB → the full 228 KB carveout.
    assert_eq!(o.carveout_bytes, 228 * 1024);
    // Above 48 KB: the opt-in note.
    assert!(o
        .notes
        .iter()
        .any(|n| n.contains("cudaFuncAttributeMaxDynamicSharedMemorySize")));
}

#[test]
fn shared_memory_rounds_to_128_bytes() {
    // 1 + 1024 → 1152; 233,472 / 1152 = 202.67 → 202, but blocks cap at 32.
    let o = occ(&sm90(), 32, 0, 1);
    assert_eq!(o.shared_memory_per_block, 1152);
    assert_eq!(o.blocks_by_shared_memory, Some(202));
    // 48 KB exactly needs no opt-in; 49,153 B does.
    assert!(occ(&sm90(), 32, 0, 48 * 1024).notes.is_empty());
    assert_eq!(occ(&sm90(), 32, 0, 48 * 1024 + 1).notes.len(), 1);
    // 20,000 + 1024 = 21,024 → 21,120 → 233,472 / 21,120 = 11.05 → 11 blocks.
    let o = occ(&sm90(), 64, 32, 20_000);
    assert_eq!(o.shared_memory_per_block, 21_120);
    assert_eq!(o.blocks_by_shared_memory, Some(11));
    assert_eq!(o.active_blocks_per_sm, 11);
    assert_eq!(o.active_warps_per_sm, 22);
}

#[test]
fn two_warp_block_of_33_threads() {
    let o = occ(&sm90(), 33, 32, 0);
    assert_eq!(o.warps_per_block, 2);
    assert_eq!(o.blocks_by_warps, 32);
    assert_eq!(o.blocks_by_registers, Some(32));
    assert_eq!(o.active_blocks_per_sm, 32);
    assert_eq!(o.occupancy_pct, 100.0);
    assert_eq!(
        o.limiters,
        vec![Limiter::Warps, Limiter::Registers, Limiter::Blocks]
    );
}

#[test]
fn block_limit_with_tiny_blocks() {
    // One-warp blocks: 64 by warps, but at most 32 resident blocks → 50 %.
    let o = occ(&sm90(), 32, 0, 0);
    assert_eq!(o.blocks_by_registers, None);
    assert_eq!(o.blocks_by_warps, 64);
    assert_eq!(o.active_blocks_per_sm, 32);
    assert_eq!(o.occupancy_pct, 50.0);
    assert_eq!(o.limiters, vec![Limiter::Blocks]);
    assert_eq!(o.registers_per_block, 0);
    // 32 × 1 KB reserve = 32 KB carveout.
    assert_eq!(o.carveout_bytes, 32 * 1024);
}

#[test]
fn too_many_registers_for_one_block_gives_zero() {
    // 65 regs → 2080 → 2304 per warp; 32 warps need 73,728 > 65,536 registers.
    let o = occ(&sm90(), 1024, 65, 0);
    assert_eq!(o.blocks_by_registers, Some(0));
    assert_eq!(o.active_blocks_per_sm, 0);
    assert_eq!(o.occupancy_pct, 0.0);
    assert_eq!(o.limiters, vec![Limiter::Registers]);
    assert_eq!(o.registers_per_block, 73_728);
    assert!(o.notes.iter().any(|n| n.contains("cannot launch")));
    // 64 registers is exactly the per-block maximum: 1 block.
    assert_eq!(occ(&sm90(), 1024, 64, 0).active_blocks_per_sm, 1);
}

#[test]
fn carveout_preference() {
    let l = sm90();
    let with = |pct| OccupancyInput {
        carveout_pct: Some(pct),
        ..input(256, 32, 10 * 1024)
    };
    // 10 KB + 1 KB = 11,264 B. Others allow 8 blocks (warps 64/8, registers 64/8).
    let o = occupancy(&l, &with(100)).unwrap();
    assert_eq!(o.active_blocks_per_sm, 8);
    assert_eq!(o.carveout_bytes, 228 * 1024);
    // 25 % of 228 KB = 57 KB → the 64 KB option → 65,536 / 11,264 = 5 blocks.
    let o = occupancy(&l, &with(25)).unwrap();
    assert_eq!(o.carveout_bytes, 64 * 1024);
    assert_eq!(o.blocks_by_shared_memory, Some(5));
    assert_eq!(o.active_blocks_per_sm, 5);
    assert_eq!(o.occupancy_pct, 62.5);
    assert_eq!(o.limiters, vec![Limiter::SharedMemory]);
    // 0 %: too small for one block, raised to the 16 KB option → 1 block.
    let o = occupancy(&l, &with(0)).unwrap();
    assert_eq!(o.carveout_bytes, 16 * 1024);
    assert_eq!(o.active_blocks_per_sm, 1);
    assert!(o.notes.iter().any(|n| n.contains("raises")));
    // Without a preference the occupancy is the maximum-carveout one; the carveout used is
    // the smallest option that keeps 8 blocks: 8 × 11,264 = 88 KB → 100 KB.
    let o = occupancy(&l, &input(256, 32, 10 * 1024)).unwrap();
    assert_eq!(o.active_blocks_per_sm, 8);
    assert_eq!(o.blocks_by_shared_memory, Some(20));
    assert_eq!(o.carveout_bytes, 100 * 1024);
}

#[test]
fn input_errors() {
    let l = sm90();
    assert_eq!(
        occupancy(&l, &input(0, 32, 0)),
        Err(OccupancyError::ThreadsPerBlock {
            threads: 0,
            max: 1024
        })
    );
    assert!(matches!(
        occupancy(&l, &input(1025, 32, 0)),
        Err(OccupancyError::ThreadsPerBlock { threads: 1025, .. })
    ));
    assert_eq!(
        occupancy(&l, &input(128, 256, 0)),
        Err(OccupancyError::RegistersPerThread {
            registers: 256,
            max: 255
        })
    );
    let err = occupancy(&l, &input(128, 32, 227 * 1024 + 1)).unwrap_err();
    assert_eq!(
        err,
        OccupancyError::SharedMemoryPerBlock {
            bytes: 227 * 1024 + 1,
            max: 227 * 1024
        }
    );
    assert!(err.to_string().contains("227 KiB"), "{err}");
    // Exactly the opt-in maximum fits once: 227 KB + 1 KB = the 228 KB SM.
    let o = occ(&l, 128, 32, 227 * 1024);
    assert_eq!(o.active_blocks_per_sm, 1);
    assert_eq!(o.carveout_bytes, 228 * 1024);
    let bad_pct = OccupancyInput {
        carveout_pct: Some(101),
        ..input(128, 32, 0)
    };
    assert_eq!(
        occupancy(&l, &bad_pct),
        Err(OccupancyError::CarveoutPercent { pct: 101 })
    );
    let mut broken = sm90();
    broken.warp_size = 0;
    assert!(matches!(
        occupancy(&broken, &input(128, 32, 0)),
        Err(OccupancyError::BadLimits { .. })
    ));
    // Errors become bad-input ComputeErrors.
    let e: ComputeError = OccupancyError::CarveoutPercent { pct: 101 }.into();
    assert_eq!(e.kind(), crate::error::ErrorKind::BadInput);
}

/// The driver's answers beyond the per-block limits, from an H100 (made by
/// `tests/data/occupancy/make_over_limit_table.py`).
const OVER_LIMIT_SM90: &str = include_str!("../../tests/data/occupancy/over_limit_sm90.csv");

#[test]
fn driver_occupancy_matches_the_driver_beyond_the_limits() {
    let l = sm90();
    let mut lines = OVER_LIMIT_SM90.lines();
    assert_eq!(
        lines.next(),
        Some("cc,threads,regs,smem_static,smem_dynamic,carveout,blocks_per_sm")
    );
    let (mut zeros, mut refused, mut answered) = (0, 0, 0);
    for (i, row) in lines.enumerate() {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f.len(), 7, "line {}: {row}", i + 2);
        assert_eq!(f[0], "9.0");
        let num = |k: usize| f[k].parse::<u32>().unwrap();
        let carveout: i32 = f[5].parse().unwrap();
        let input = OccupancyInput {
            threads_per_block: num(1),
            registers_per_thread: num(2),
            shared_mem_per_block: num(3) + num(4),
            carveout_pct: u32::try_from(carveout).ok(),
        };
        let got = driver_occupancy(&l, &input);
        match f[6].parse::<u32>() {
            Ok(blocks) => {
                let o = got.unwrap_or_else(|e| panic!("line {}: {row}: {e}", i + 2));
                assert_eq!(o.active_blocks_per_sm, blocks, "line {}: {row}", i + 2);
                if blocks == 0 {
                    zeros += 1;
                    assert!(
                        o.notes.iter().any(|n| n.contains("cannot launch")),
                        "line {}: {:?}",
                        i + 2,
                        o.notes
                    );
                } else {
                    answered += 1;
                    // Within the limits both calculations agree.
                    assert_eq!(occupancy(&l, &input), Ok(o));
                }
            }
            // The driver refused the query (0 threads) or the carveout (101 %).
            Err(_) => {
                assert!(f[6].contains("error:"), "line {}: {row}", i + 2);
                assert!(got.is_err(), "line {}: {row}: {got:?}", i + 2);
                refused += 1;
            }
        }
    }
    assert_eq!((zeros, answered, refused), (120, 27, 77));
}

#[test]
fn over_limit_launches_get_zero_blocks_and_their_limiter() {
    let l = sm90();
    let driver = |threads, regs, smem| driver_occupancy(&l, &input(threads, regs, smem));
    // More threads than a block may have: no warp slots for it.
    let o = driver(2048, 32, 0).unwrap();
    assert_eq!((o.active_blocks_per_sm, o.blocks_by_warps), (0, 0));
    assert_eq!(o.limiters, vec![Limiter::Warps]);
    assert_eq!((o.active_warps_per_sm, o.occupancy_pct), (0, 0.0));
    assert!(o.notes.iter().any(|n| n.contains("2048 threads")), "{o:?}");
    // ... and too many registers for the block as well: both limiters.
    let o = driver(2048, 64, 0).unwrap();
    assert_eq!(o.limiters, vec![Limiter::Warps, Limiter::Registers]);
    // More registers per thread than a thread may have.
    let o = driver(128, 256, 0).unwrap();
    assert_eq!(o.blocks_by_registers, Some(0));
    assert_eq!(o.limiters, vec![Limiter::Registers]);
    assert!(o.notes.iter().any(|n| n.contains("per-thread maximum")));
    // More shared memory than a block may use, even after opting in: the case that
    // aborted `occupancy --batch` at the first such row.
    let o = driver(128, 32, 227 * 1024 + 1).unwrap();
    assert_eq!(o.blocks_by_shared_memory, Some(0));
    assert_eq!(o.active_blocks_per_sm, 0);
    assert_eq!(o.limiters, vec![Limiter::SharedMemory]);
    assert_eq!(o.notes.len(), 1, "{:?}", o.notes);
    assert!(
        o.notes[0].contains("per-block maximum of 232448 B"),
        "{o:?}"
    );
    // Extremes do not overflow.
    let o = driver(u32::MAX, u32::MAX, u32::MAX).unwrap();
    assert_eq!(o.active_blocks_per_sm, 0);
    assert_eq!(
        o.limiters,
        vec![Limiter::Warps, Limiter::Registers, Limiter::SharedMemory]
    );
    // Before cc 8.0 (no reserve, 256 B units, 48 KB per block on sm_52).
    let l52 = GpuLimits::for_cc(5, 2).unwrap();
    let o = driver_occupancy(&l52, &input(64, 32, 48 * 1024 + 1)).unwrap();
    assert_eq!(
        (o.active_blocks_per_sm, o.limiters.clone()),
        (0, vec![Limiter::SharedMemory])
    );
    assert_eq!(
        driver_occupancy(&l52, &input(64, 32, 48 * 1024))
            .unwrap()
            .active_blocks_per_sm,
        2
    );
    // What the driver refuses stays an error; the strict calculator refuses all of them.
    assert!(matches!(
        driver(0, 32, 0),
        Err(OccupancyError::ThreadsPerBlock { threads: 0, .. })
    ));
    let bad_pct = OccupancyInput {
        carveout_pct: Some(101),
        ..input(128, 32, 0)
    };
    assert_eq!(
        driver_occupancy(&l, &bad_pct),
        Err(OccupancyError::CarveoutPercent { pct: 101 })
    );
    assert!(occupancy(&l, &input(2048, 32, 0)).is_err());
    assert!(occupancy(&l, &input(128, 256, 0)).is_err());
    assert!(occupancy(&l, &input(128, 32, 227 * 1024 + 1)).is_err());
}

#[test]
fn other_architectures() {
    // sm_86: 48 warps, 16 blocks, 100 KB.
    let l = GpuLimits::for_cc(8, 6).unwrap();
    let o = occ(&l, 1024, 32, 0);
    assert_eq!(o.active_blocks_per_sm, 1);
    assert!((o.occupancy_pct - 200.0 / 3.0).abs() < 1e-9);
    assert_eq!(occ(&l, 32, 16, 0).active_blocks_per_sm, 16);
    assert!(occupancy(&l, &input(64, 32, 99 * 1024 + 1)).is_err());
    // sm_89: 24 blocks.
    let l = GpuLimits::for_cc(8, 9).unwrap();
    assert_eq!(occ(&l, 64, 32, 0).active_blocks_per_sm, 24);
    // sm_75: 32 warps, 16 blocks, 256 B units, no reserve, carveouts 32/64 KB.
    let l = GpuLimits::for_cc(7, 5).unwrap();
    let o = occ(&l, 1024, 32, 0);
    assert_eq!(o.active_blocks_per_sm, 1);
    assert_eq!(o.occupancy_pct, 100.0);
    assert_eq!(o.blocks_by_shared_memory, None);
    assert_eq!(o.carveout_bytes, 32 * 1024);
    // 100 B → 256 B allocated; 64 KB / 256 = 256, blocks cap at 16.
    let o = occ(&l, 32, 0, 100);
    assert_eq!(o.shared_memory_per_block, 256);
    assert_eq!(o.blocks_by_shared_memory, Some(256));
    assert_eq!(o.active_blocks_per_sm, 16);
    // sm_70, 0 % carveout and no shared memory: the 0 KB option.
    let l = GpuLimits::for_cc(7, 0).unwrap();
    let o = occupancy(
        &l,
        &OccupancyInput {
            carveout_pct: Some(0),
            ..input(256, 32, 0)
        },
    )
    .unwrap();
    assert_eq!(o.carveout_bytes, 0);
    assert_eq!(o.active_blocks_per_sm, 8);
}

#[test]
fn small_register_file_per_block_on_sm53() {
    let l = GpuLimits::for_cc(5, 3).unwrap();
    // 32 warps × 1024 = 32,768 registers: exactly the per-block maximum.
    assert_eq!(occ(&l, 1024, 32, 0).active_blocks_per_sm, 2);
    // 40 regs → 1280 per warp × 32 = 40,960 > 32,768: cannot launch (fine on sm_52).
    assert_eq!(occ(&l, 1024, 40, 0).active_blocks_per_sm, 0);
    let l52 = GpuLimits::for_cc(5, 2).unwrap();
    assert_eq!(occ(&l52, 1024, 40, 0).active_blocks_per_sm, 1);
    // Pre-Volta: the carveout preference is ignored with a note.
    let o = occupancy(
        &l52,
        &OccupancyInput {
            carveout_pct: Some(0),
            ..input(256, 32, 1024)
        },
    )
    .unwrap();
    assert_eq!(o.carveout_bytes, 96 * 1024);
    assert!(o.notes.iter().any(|n| n.contains("ignored")));
}

#[test]
fn gp100_two_sub_partitions_and_gp10x_rule() {
    let l60 = GpuLimits::for_cc(6, 0).unwrap();
    let l61 = GpuLimits::for_cc(6, 1).unwrap();
    assert_eq!(l60.register_sub_partitions, 2);
    // 136 regs → 4352 per warp. GP100: 32,768 / 4352 = 7 per half → 14 warps → 2 blocks
    // of 7 warps; GP10x: 16,384 / 4352 = 3 per quarter → 12 warps → 1 block.
    assert_eq!(occ(&l60, 224, 136, 0).blocks_by_registers, Some(2));
    assert_eq!(occ(&l61, 224, 136, 0).blocks_by_registers, Some(1));
    // 14 warps fit GP100 alone, but not GP10x: the driver refuses on GP100 too.
    assert_eq!(occ(&l61, 448, 136, 0).blocks_by_registers, Some(0));
    assert_eq!(occ(&l60, 448, 136, 0).active_blocks_per_sm, 0);
}

#[test]
fn occupancy_never_rises_with_registers() {
    for (major, minor) in SUPPORTED_COMPUTE_CAPABILITIES {
        let l = GpuLimits::for_cc(major, minor).unwrap();
        for threads in [32, 96, 128, 256, 384, 640, 1024] {
            let sweep = sweep_registers(&l, &input(threads, 0, 0));
            assert_eq!(sweep.len(), 256);
            assert_eq!(sweep[0].x, 0);
            assert_eq!(sweep[255].x, 255);
            assert!(
                sweep
                    .windows(2)
                    .all(|w| w[1].active_warps <= w[0].active_warps),
                "sm_{major}{minor}, {threads} threads"
            );
            assert!(sweep[0].active_warps > 0);
        }
    }
}

#[test]
fn occupancy_never_rises_with_shared_memory() {
    for (major, minor) in SUPPORTED_COMPUTE_CAPABILITIES {
        let l = GpuLimits::for_cc(major, minor).unwrap();
        for threads in [32, 128, 512] {
            let sweep = sweep_shared_memory(&l, &input(threads, 32, 0));
            assert_eq!(sweep[0].x, 0);
            assert_eq!(
                sweep.last().map(|p| p.x),
                Some(l.max_shared_memory_per_block_optin)
            );
            assert!(sweep.windows(2).all(|w| w[1].x == w[0].x + 512));
            assert!(
                sweep
                    .windows(2)
                    .all(|w| w[1].active_warps <= w[0].active_warps),
                "sm_{major}{minor}, {threads} threads"
            );
            // The largest block still launches once.
            assert!(sweep.last().is_some_and(|p| p.active_warps > 0));
        }
    }
}

#[test]
fn block_size_sweep() {
    let l = sm90();
    let sweep = sweep_block_size(&l, &input(0, 32, 0));
    assert_eq!(sweep.len(), 32);
    assert_eq!(sweep[0].x, 32);
    assert_eq!(sweep[31].x, 1024);
    // 32 threads: block-limited to 32 warps (50 %); 64 threads: 32 blocks × 2 = 100 %.
    assert_eq!(sweep[0].occupancy_pct, 50.0);
    assert_eq!(sweep[1].occupancy_pct, 100.0);
    // 96 threads (3 warps): floor(64 / 3) = 21 blocks = 63 warps.
    assert_eq!(sweep[2].active_warps, 63);
    // With too many registers for a 1024-thread block the curve drops to 0 there.
    let sweep = sweep_block_size(&l, &input(32, 128, 0));
    assert_eq!(sweep[31].active_warps, 0);
    assert_eq!(sweep[0].active_warps, 16);
}

#[test]
fn parse_compute_capabilities() {
    for (text, cc) in [
        ("9.0", (9, 0)),
        ("90", (9, 0)),
        ("sm_90", (9, 0)),
        ("SM_90a", (9, 0)),
        ("sm90", (9, 0)),
        ("compute_86", (8, 6)),
        ("8.6", (8, 6)),
        (" 7.5 ", (7, 5)),
        ("12.0", (12, 0)),
        ("120", (12, 0)),
        ("sm_100", (10, 0)),
        ("sm_100f", (10, 0)),
    ] {
        assert_eq!(parse_cc(text), Ok(cc), "{text}");
    }
    for text in [
        "", "9", "9.", ".0", "sm_", "abc", "9.x", "1234", "sm_9o", "-9.0",
    ] {
        assert!(
            matches!(
                parse_cc(text),
                Err(OccupancyError::BadComputeCapability { .. })
            ),
            "{text}"
        );
    }
}

#[test]
fn serde_shapes() {
    let o = occ(&sm90(), 256, 64, 4096);
    let json = serde_json::to_value(&o).unwrap();
    assert_eq!(json["limiters"][0], "registers");
    assert_eq!(json["active_blocks_per_sm"], 4);
    let back: OccupancyOutput = serde_json::from_value(json).unwrap();
    assert_eq!(back, o);
    let i: OccupancyInput = serde_json::from_str(
        r#"{"threads_per_block":128,"registers_per_thread":32,"shared_mem_per_block":0,"carveout_pct":null}"#,
    )
    .unwrap();
    assert_eq!(i, input(128, 32, 0));
    assert_eq!(
        serde_json::to_string(&Limiter::SharedMemory).unwrap(),
        "\"shared_memory\""
    );
    let l: GpuLimits = serde_json::from_value(serde_json::to_value(sm90()).unwrap()).unwrap();
    assert_eq!(l, sm90());
}

/// Issue 37: 100 threads were used as 4 warps without a word; the calculation says what it
/// counts and why.
#[test]
fn a_block_that_is_not_whole_warps_says_how_it_is_rounded() {
    let o = occ(&sm90(), 100, 32, 0);
    assert_eq!(o.warps_per_block, 4);
    let note = o
        .notes
        .iter()
        .find(|n| n.contains("100 threads per block run as 4 warps"))
        .unwrap_or_else(|| panic!("{:?}", o.notes));
    assert!(
        note.contains("128 thread slots, 28 of them idle") && note.contains("whole warp"),
        "{note}"
    );
    assert_eq!(warp_rounding(&sm90(), 128), None);
    assert_eq!(warp_rounding(&sm90(), 0), None);
    assert!(warp_rounding(&sm90(), u32::MAX).is_some());
}

/// Issue 37: "-5" stayed in a field with the old results; the field's text is refused with
/// what it takes.
#[test]
fn a_calculator_field_refuses_what_is_not_a_whole_number_in_range() {
    assert_eq!(parse_field(" 100 ", "threads per block", 32, 1024), Ok(100));
    assert_eq!(
        parse_field("1,024", "threads per block", 32, 1024),
        Ok(1024)
    );
    let neg = parse_field("-5", "threads per block", 32, 1024)
        .unwrap_err()
        .to_string();
    assert_eq!(
        neg,
        "threads per block: -5 cannot be negative: enter a whole number from 32 to 1,024"
    );
    for bad in ["", "abc", "1.5", "2000", "8", "99999999999999999999"] {
        let e = parse_field(bad, "threads per block", 32, 1024).unwrap_err();
        assert!(
            e.to_string()
                .contains("enter a whole number from 32 to 1,024"),
            "{bad}: {e}"
        );
    }
}

/// Issue 37: the shared-memory label never changed with the compute capability.
#[test]
fn the_shared_memory_label_states_each_capabilitys_limit() {
    let label = |a, b| GpuLimits::for_cc(a, b).unwrap().shared_memory_label();
    assert_eq!(
        label(9, 0),
        "bytes; up to 227 KiB on sm_90 after opting in, 48 KiB without"
    );
    assert_eq!(
        label(7, 5),
        "bytes; up to 64 KiB on sm_75 after opting in, 48 KiB without"
    );
    assert_eq!(label(5, 0), "bytes; up to 48 KiB on sm_50");
}

/// Issue 37: ncu counted 7 shared-memory blocks where the calculator counted 12, because
/// ncu's launch ran with a 132 KiB carveout ("135.17 KB"). The carveout can be chosen, and
/// the default says what it counts against.
#[test]
fn a_carveout_of_ncus_size_is_chosen_and_the_default_explained() {
    let l = sm90();
    assert_eq!(
        l.carveout_pct_for(135_170).map(|p| {
            let input = OccupancyInput {
                carveout_pct: Some(p),
                ..input(128, 0, 17 * 1024)
            };
            occupancy(&l, &input).unwrap().carveout_bytes
        }),
        Some(132 * 1024)
    );
    // Every option of every capability is reachable through its preference.
    for (major, minor) in SUPPORTED_COMPUTE_CAPABILITIES {
        let l = GpuLimits::for_cc(major, minor).unwrap();
        for &kb in &l.carveout_options_kb {
            let Some(pct) = l.carveout_pct_for(kb * KB) else {
                assert!(!l.has_carveout());
                continue;
            };
            let wanted = u64::from(pct) * u64::from(l.max_shared_memory_per_sm) / 100;
            assert_eq!(
                l.align_up_carveout(wanted),
                Some(u64::from(kb * KB)),
                "{major}.{minor} {kb}"
            );
        }
    }
    assert_eq!(l.carveout_pct_for(50 * 1024), None);
    // 17 KiB + 1 KiB reserve = 18 KiB: 12 blocks in 228 KiB, 7 in ncu's 132 KiB.
    let default = occ(&l, 128, 0, 17 * 1024);
    assert_eq!(default.blocks_by_shared_memory, Some(12));
    let chosen = occupancy(
        &l,
        &OccupancyInput {
            carveout_pct: l.carveout_pct_for(135_170),
            ..input(128, 0, 17 * 1024)
        },
    )
    .unwrap();
    assert_eq!(chosen.blocks_by_shared_memory, Some(7));
    let why = carveout_explanation(&l, &input(128, 0, 17 * 1024)).unwrap();
    assert!(
        why.contains("12 blocks")
            && why.contains("228 KiB")
            && why.contains("Shared Memory Configuration Size"),
        "{why}"
    );
    assert_eq!(
        carveout_explanation(
            &l,
            &OccupancyInput {
                carveout_pct: Some(50),
                ..input(128, 0, 0)
            }
        ),
        None
    );
}
