//! Kernel durations from CUPTI's activity records, the clock the profilers read (Nsight Systems
//! shows these records; Nsight Compute's `gpu__time_duration` measures the same span), for the
//! step anatomy. A pair of CUDA events around a launch also times the event commands and the
//! launch's own start-up, about a microsecond: a 3 µs kernel reads 30–50 % long. CUPTI's
//! `CONCURRENT_KERNEL` records carry each kernel's own start and end on the GPU.
//!
//! Used where `libcupti` can be loaded (the CUDA toolkit's `extras/CUPTI/lib64`, or PyTorch's
//! `nvidia-cuda-cupti` wheel, on the loader's path) and no other CUPTI client holds it (under
//! `ncu` it does): [`Capture::begin`] answers `None` otherwise and the anatomy keeps its events.
//! One capture at a time per process; the records are process-wide, so the anatomy matches
//! them to its own launches by name, in order.

use std::alloc::{alloc, dealloc, Layout};
use std::ffi::{c_char, CStr};
use std::sync::{Mutex, MutexGuard, OnceLock};

use cudarc::cupti::result::activity;
use cudarc::cupti::sys;

/// One kernel's execution, from its activity record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KernelRecord {
    /// The entry point's name (our kernels are `extern "C"`: unmangled).
    pub(crate) name: String,
    /// Start on the GPU, ns (CUPTI's timestamp).
    pub(crate) start_ns: u64,
    /// End on the GPU, ns.
    pub(crate) end_ns: u64,
}

/// The leading fields of `CUpti_ActivityKernel4` … `CUpti_ActivityKernel10` and later, which
/// every version of the record shares (later versions append fields): what is read here.
#[repr(C)]
struct KernelRecordPrefix {
    kind: u32,
    cache_config: u8,
    shared_memory_config: u8,
    registers_per_thread: u16,
    partitioned_global_cache_requested: u32,
    partitioned_global_cache_executed: u32,
    start: u64,
    end: u64,
    completed: u64,
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    grid: [i32; 3],
    block: [i32; 3],
    static_shared_memory: i32,
    dynamic_shared_memory: i32,
    local_memory_per_thread: u32,
    local_memory_total: u32,
    correlation_id: u32,
    grid_id: i64,
    name: *const c_char,
}

/// Bytes of each activity buffer CUPTI asks for (its samples use 8 MiB; a step is ~20 records).
const BUFFER_BYTES: usize = 1 << 20;
/// CUPTI wants 8-byte aligned buffers.
const BUFFER_ALIGN: usize = 8;

/// Records the completed buffers held, until [`Capture::finish`] takes them.
static RECORDS: Mutex<Vec<KernelRecord>> = Mutex::new(Vec::new());
/// Held by the one capture in progress.
static CAPTURE: Mutex<()> = Mutex::new(());
/// Whether the library loaded and took the buffer callbacks (asked once per process).
static READY: OnceLock<bool> = OnceLock::new();

fn buffer_layout() -> Option<Layout> {
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).ok()
}

/// CUPTI asks for a buffer to fill.
extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let ptr = match buffer_layout() {
        // SAFETY: a non-zero size.
        Some(l) => unsafe { alloc(l) },
        None => std::ptr::null_mut(),
    };
    // SAFETY: CUPTI passes valid out-pointers; a null buffer with size 0 tells it none is
    // available (it drops records rather than writing through it).
    unsafe {
        *buffer = ptr;
        *size = if ptr.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

/// CUPTI hands a filled buffer back: its kernel records are kept, the buffer freed.
extern "C" fn buffer_completed(
    _context: cudarc::driver::sys::CUcontext,
    _stream_id: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut found = Vec::new();
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: `buffer` holds `valid` bytes of records CUPTI wrote; get_next_record walks them.
    while unsafe { activity::get_next_record(buffer, valid, &mut record) }.is_ok() {
        if record.is_null() {
            break;
        }
        // SAFETY: every record starts with its kind.
        let kind = unsafe { (*record).kind };
        if kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
            || kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL
        {
            // SAFETY: a kernel record of any version since 4 starts with these fields.
            let k = unsafe { &*(record as *const KernelRecordPrefix) };
            let name = if k.name.is_null() {
                String::new()
            } else {
                // SAFETY: CUPTI's name is a NUL-terminated string it owns for the process.
                unsafe { CStr::from_ptr(k.name) }
                    .to_string_lossy()
                    .into_owned()
            };
            found.push(KernelRecord {
                name,
                start_ns: k.start,
                end_ns: k.end,
            });
        }
    }
    if let Ok(mut r) = RECORDS.lock() {
        r.extend(found);
    }
    if let Some(l) = buffer_layout() {
        // SAFETY: allocated by buffer_requested with the same layout.
        unsafe { dealloc(buffer, l) };
    }
}

/// Whether CUPTI can be used: the library loads and took the buffer callbacks.
fn ready() -> bool {
    *READY.get_or_init(|| {
        // SAFETY: only checks whether the shared library can be opened.
        if !unsafe { sys::is_culib_present() } {
            return false;
        }
        activity::register_callbacks(Some(buffer_requested), Some(buffer_completed)).is_ok()
    })
}

/// Kernel activity being recorded; [`Capture::finish`] returns the records.
pub(crate) struct Capture {
    _only: MutexGuard<'static, ()>,
}

impl Capture {
    /// Starts recording kernel activity, or `None` where CUPTI is not available, another
    /// capture is in progress or CUPTI refuses (another client, such as `ncu`, holds it).
    pub(crate) fn begin() -> Option<Capture> {
        if !ready() {
            return None;
        }
        let only = CAPTURE.try_lock().ok()?;
        if let Ok(mut r) = RECORDS.lock() {
            r.clear();
        }
        activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).ok()?;
        Some(Capture { _only: only })
    }

    /// Stops recording and returns the kernels recorded, in the order CUPTI delivered them
    /// (call it after the GPU finished the work: the records of unfinished kernels are not
    /// there yet). `None` when the records could not be flushed.
    pub(crate) fn finish(self) -> Option<Vec<KernelRecord>> {
        // The flag's value is that of CUPTI_ACTIVITY_FLAG_FLUSH_FORCED (the C header reuses
        // values across enums, hence the transmute in cudarc's own example).
        let forced = sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED as u32;
        let flushed = activity::flush_all(forced).is_ok();
        let _ = activity::disable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if !flushed {
            return None;
        }
        RECORDS.lock().ok().map(|mut r| std::mem::take(&mut *r))
    }
}

/// Each of `names` (launches in issue order) matched to the next record of the same name:
/// `(start_ns, end_ns)`, `None` where no record is left for it.
pub(crate) fn match_in_order(names: &[&str], records: &[KernelRecord]) -> Vec<Option<(u64, u64)>> {
    let mut next = 0usize;
    names
        .iter()
        .map(|name| {
            let at = records[next.min(records.len())..]
                .iter()
                .position(|r| r.name == *name)?;
            let r = &records[next + at];
            next += at + 1;
            Some((r.start_ns, r.end_ns))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, start: u64, end: u64) -> KernelRecord {
        KernelRecord {
            name: name.into(),
            start_ns: start,
            end_ns: end,
        }
    }

    #[test]
    fn launches_meet_their_records_by_name_in_order() {
        // Another thread's kernel (foreign) in between, and a launch with no record left.
        let records = [
            rec("gather_f16", 0, 3),
            rec("foreign", 4, 9),
            rec("dense_fwd_f16", 10, 16),
            rec("gather_f16", 20, 24),
        ];
        let got = match_in_order(
            &["gather_f16", "dense_fwd_f16", "gather_f16", "adam_f16"],
            &records,
        );
        assert_eq!(got, [Some((0, 3)), Some((10, 16)), Some((20, 24)), None]);
        // A name that never ran does not consume the others' records.
        let got = match_in_order(&["missing", "gather_f16"], &records);
        assert_eq!(got, [None, Some((0, 3))]);
    }

    #[test]
    fn the_record_prefix_has_cuptis_offsets() {
        // The fields read sit where CUPTI's own record puts them (CUpti_ActivityKernel9, the
        // header cudarc was generated from; versions 4 to 10 share this prefix).
        use std::mem::offset_of;
        type K9 = sys::CUpti_ActivityKernel9;
        assert_eq!(offset_of!(KernelRecordPrefix, start), offset_of!(K9, start));
        assert_eq!(offset_of!(KernelRecordPrefix, end), offset_of!(K9, end));
        assert_eq!(offset_of!(KernelRecordPrefix, name), offset_of!(K9, name));
        assert_eq!(
            offset_of!(KernelRecordPrefix, correlation_id),
            offset_of!(K9, correlationId)
        );
        assert_eq!((offset_of!(K9, start), offset_of!(K9, name)), (16, 104));
    }
}
