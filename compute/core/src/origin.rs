//! Where a result was made: the machine, the device, the date and the build of every saved
//! run, and the one decision of whether it was made here ("this machine", "this GPU").
//!
//! The engine stamps a result when it makes it ([`Stamp`]: the host, a hashed machine ID, the
//! build and the GPU driver); the device and the date come from the report itself, so a file
//! saved before stamps existed still has an [`Origin`], only with no machine, and is never
//! taken for this machine's. The current machine is a [`Here`] (from the doctor's report);
//! [`Origin::is_here`] is the only place that compares them: pages ask it, never the device's
//! name.

use serde::{Deserialize, Serialize};

use crate::format::utc_date;

/// A machine, as the engine names it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MachineId {
    /// The host name (for people; two machines may share one).
    pub host: String,
    /// A stable identifier of the machine: a hash of its `/etc/machine-id` (never the raw
    /// ID), or of the host name where there is none.
    pub id: String,
}

/// The program that made a result.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The program's version.
    pub version: String,
    /// The git commit it was built from, when the build knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl BuildInfo {
    /// `showdown 0.1.0 (abc1234)`, or without the commit when unknown.
    pub fn words(&self) -> String {
        match &self.commit {
            Some(c) => format!(
                "showdown {} ({})",
                self.version,
                c.chars().take(12).collect::<String>()
            ),
            None => format!("showdown {}", self.version),
        }
    }
}

/// What the engine records of where a result is made, when it makes it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Stamp {
    /// The machine.
    pub machine: MachineId,
    /// The build.
    pub build: BuildInfo,
    /// The NVIDIA driver's version, on a GPU run where it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
}

/// Where a result comes from: its machine (`None` for files saved before results were
/// stamped), device, date and build.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Origin {
    /// The machine; `None` when the result was saved before machines were recorded.
    #[serde(default)]
    pub machine: Option<MachineId>,
    /// `cpu` or `cuda`.
    #[serde(default)]
    pub backend: String,
    /// The device's name, without its architecture: `NVIDIA H200`, a CPU model.
    #[serde(default)]
    pub device: String,
    /// The GPU's compute capability (`9.0`), when the report names its architecture.
    #[serde(default)]
    pub compute_capability: Option<String>,
    /// The NVIDIA driver's version, when recorded.
    #[serde(default)]
    pub driver: Option<String>,
    /// When the result was saved, Unix seconds.
    #[serde(default)]
    pub saved_at: u64,
    /// The build that made it, when recorded.
    #[serde(default)]
    pub build: Option<BuildInfo>,
}

/// The machine the compute service runs on now, as the doctor sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Here {
    /// The machine; `None` from a service too old to say (nothing is then "here").
    pub machine: Option<MachineId>,
    /// The names of the GPUs it has.
    pub gpus: Vec<String>,
}

impl Origin {
    /// The origin of a result whose report names `backend` and `device` (`NVIDIA H200
    /// (sm_90)`, a CPU model), saved at `saved_at`, with the engine's `stamp` if it has one.
    pub fn of(stamp: Option<&Stamp>, backend: &str, device: &str, saved_at: u64) -> Origin {
        let (name, cc) = split_device(device);
        Origin {
            machine: stamp.map(|s| s.machine.clone()),
            backend: backend.to_string(),
            device: name,
            compute_capability: cc,
            driver: stamp.and_then(|s| s.driver.clone()),
            saved_at,
            build: stamp.map(|s| s.build.clone()),
        }
    }

    /// Whether the result was made here: on the same machine (by its stable ID) and, for a
    /// GPU result, on a GPU of that name that the machine still has. A result with no
    /// recorded machine is never here.
    pub fn is_here(&self, here: &Here) -> bool {
        let same_machine = match (&self.machine, &here.machine) {
            (Some(a), Some(b)) => !a.id.is_empty() && a.id == b.id,
            _ => false,
        };
        same_machine && (!self.on_gpu() || here.gpus.iter().any(|g| g == &self.device))
    }

    /// Whether it ran on a GPU.
    pub fn on_gpu(&self) -> bool {
        self.backend == "cuda" || self.compute_capability.is_some()
    }

    /// `2026-11-28`.
    pub fn date(&self) -> String {
        utc_date(self.saved_at)
    }

    /// The device in words: `NVIDIA H200 (compute capability 9.0, driver 580.95)`.
    pub fn device_words(&self) -> String {
        let mut extra = Vec::new();
        if let Some(cc) = &self.compute_capability {
            extra.push(format!("compute capability {cc}"));
        }
        if let Some(d) = &self.driver {
            extra.push(format!("driver {d}"));
        }
        if extra.is_empty() {
            self.device.clone()
        } else {
            format!("{} ({})", self.device, extra.join(", "))
        }
    }

    /// Whose result it is, in words a page can print as they are: `this machine (NVIDIA H200)`
    /// when [`Origin::is_here`], else the device, the machine and the date:
    /// `NVIDIA H200 (compute capability 9.0) on gpu-box, 2026-11-28, not this machine`.
    pub fn words(&self, here: &Here) -> String {
        if self.is_here(here) {
            return format!("this machine ({})", self.device_words());
        }
        let host = match &self.machine {
            Some(m) if !m.host.is_empty() => format!(" on {}", m.host),
            Some(_) => " on another machine".to_string(),
            None => " (machine not recorded)".to_string(),
        };
        format!(
            "{}{host}, {}, not this machine",
            self.device_words(),
            self.date()
        )
    }

    /// The machine line of a group of results: the device, machine, date and build.
    pub fn machine_line(&self, here: &Here) -> String {
        let build = self
            .build
            .as_ref()
            .map(|b| format!("; made by {}", b.words()))
            .unwrap_or_default();
        if self.is_here(here) {
            format!(
                "This machine: {}, {}{build}",
                self.device_words(),
                self.date()
            )
        } else {
            let machine = match &self.machine {
                Some(m) if !m.host.is_empty() => format!("machine {}", m.host),
                Some(_) => "another machine".to_string(),
                None => "a machine not recorded (saved before machines were)".to_string(),
            };
            format!(
                "Another machine: {} on {machine}, {}{build}",
                self.device_words(),
                self.date()
            )
        }
    }

    /// Why an action that needs the result's own hardware (repeat it, profile it, run it on
    /// its backend) cannot run here; `None` when the result was made here.
    pub fn needs_hardware(&self, action: &str, here: &Here) -> Option<String> {
        if self.is_here(here) {
            return None;
        }
        let made = if self.machine.is_none() {
            "on a machine that was not recorded".to_string()
        } else {
            "on another machine".to_string()
        };
        Some(format!(
            "{action} needs the hardware this result was made on: {} {made}, {}. Run it anew \
             here instead.",
            self.device_words(),
            self.date()
        ))
    }

    /// The key results are grouped by: the machine (or none), the backend and the device.
    pub fn group_key(&self) -> (String, String, String) {
        (
            self.machine
                .as_ref()
                .map(|m| m.id.clone())
                .unwrap_or_default(),
            self.backend.clone(),
            self.device.clone(),
        )
    }
}

/// A sentence an engine saved with a result, in words that hold wherever it is read: engines
/// said "this GPU" of the GPU they ran on (`this GPU (sm_90) has FP8 tensor cores`), which
/// is "the GPU" read on another machine.
pub fn saved_words(text: &str) -> String {
    text.replace("this GPU", "the GPU")
}

/// `NVIDIA H200 (sm_90)` as (`NVIDIA H200`, `9.0`); a device without an `(sm_XY)` suffix as
/// itself and no compute capability.
pub fn split_device(device: &str) -> (String, Option<String>) {
    let d = device.trim();
    if let Some(open) = d.rfind("(sm_") {
        if let Some(inner) = d[open + 4..].strip_suffix(')') {
            let digits: String = inner.chars().take_while(|c| c.is_ascii_digit()).collect();
            if digits.len() >= 2 {
                let (major, minor) = digits.split_at(digits.len() - 1);
                return (
                    d[..open].trim().to_string(),
                    Some(format!("{major}.{minor}")),
                );
            }
        }
    }
    (d.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(id: &str) -> Stamp {
        Stamp {
            machine: MachineId {
                host: "gpu-box".into(),
                id: id.into(),
            },
            build: BuildInfo {
                version: "0.1.0".into(),
                commit: Some("abcdef1234567890".into()),
            },
            driver: Some("580.95".into()),
        }
    }

    fn here(id: Option<&str>, gpus: &[&str]) -> Here {
        Here {
            machine: id.map(|i| MachineId {
                host: "here".into(),
                id: i.into(),
            }),
            gpus: gpus.iter().map(|g| g.to_string()).collect(),
        }
    }

    #[test]
    fn a_device_with_its_architecture_splits_into_name_and_compute_capability() {
        assert_eq!(
            split_device("NVIDIA H200 (sm_90)"),
            ("NVIDIA H200".into(), Some("9.0".into()))
        );
        assert_eq!(
            split_device("NVIDIA GeForce RTX 4090 (sm_89)"),
            ("NVIDIA GeForce RTX 4090".into(), Some("8.9".into()))
        );
        assert_eq!(
            split_device("B200 (sm_100)"),
            ("B200".into(), Some("10.0".into()))
        );
        assert_eq!(
            split_device("AMD EPYC 7B13"),
            ("AMD EPYC 7B13".into(), None)
        );
    }

    /// Regression (issue 37): an H200 run was called "this GPU" on a machine without one.
    #[test]
    fn only_the_same_machine_with_the_same_gpu_is_here() {
        let h200 = Origin::of(
            Some(&stamp("m1")),
            "cuda",
            "NVIDIA H200 (sm_90)",
            1_795_870_863,
        );
        assert!(h200.is_here(&here(Some("m1"), &["NVIDIA H200"])));
        // Another machine, or this machine without that GPU any more, or a service that does
        // not say which machine it is.
        assert!(!h200.is_here(&here(Some("m2"), &["NVIDIA H200"])));
        assert!(!h200.is_here(&here(Some("m1"), &[])));
        assert!(!h200.is_here(&here(None, &["NVIDIA H200"])));
        // A CPU run needs only the machine.
        let cpu = Origin::of(Some(&stamp("m1")), "cpu", "AMD EPYC 7B13", 1);
        assert!(cpu.is_here(&here(Some("m1"), &[])));
        // An empty ID matches nothing.
        let blank = Origin::of(Some(&stamp("")), "cpu", "x", 1);
        assert!(!blank.is_here(&here(Some(""), &[])));
    }

    #[test]
    fn a_result_saved_before_stamps_is_never_here_and_keeps_its_device_and_date() {
        let old = Origin::of(None, "cuda", "NVIDIA H200 (sm_90)", 1_795_870_863);
        assert!(!old.is_here(&here(Some("m1"), &["NVIDIA H200"])));
        assert_eq!(old.date(), "2026-11-28");
        let w = old.words(&here(Some("m1"), &[]));
        assert!(w.contains("NVIDIA H200 (compute capability 9.0)"), "{w}");
        assert!(
            w.contains("2026-11-28") && w.contains("not this machine"),
            "{w}"
        );
        assert!(!w.contains("this GPU"), "{w}");
        let why = old
            .needs_hardware("Repeat", &here(Some("m1"), &[]))
            .unwrap_or_default();
        assert!(why.starts_with("Repeat needs the hardware"), "{why}");
        assert!(
            why.contains("NVIDIA H200") && why.contains("2026-11-28"),
            "{why}"
        );
    }

    #[test]
    fn words_and_lines_say_this_machine_only_here() {
        let o = Origin::of(
            Some(&stamp("m1")),
            "cuda",
            "NVIDIA H200 (sm_90)",
            1_795_870_863,
        );
        let h = here(Some("m1"), &["NVIDIA H200"]);
        assert_eq!(
            o.words(&h),
            "this machine (NVIDIA H200 (compute capability 9.0, driver 580.95))"
        );
        assert!(o.machine_line(&h).starts_with("This machine: NVIDIA H200"));
        assert!(o.machine_line(&h).contains("showdown 0.1.0 (abcdef123456)"));
        assert_eq!(o.needs_hardware("Repeat", &h), None);
        let away = here(Some("m2"), &[]);
        assert_eq!(
            o.words(&away),
            "NVIDIA H200 (compute capability 9.0, driver 580.95) on gpu-box, 2026-11-28, not this machine"
        );
        assert!(o
            .machine_line(&away)
            .starts_with("Another machine: NVIDIA H200"));
        assert!(!o.machine_line(&away).contains("This machine"));
    }

    #[test]
    fn an_origin_from_before_reads_from_json_without_its_fields() {
        let o: Origin = serde_json::from_str("{}").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(o.machine, None);
        assert!(!o.is_here(&here(Some(""), &[])));
    }

    /// Regression (issue 37): the H200's saved FP8 sentence said "this GPU (sm_90)" on a
    /// machine without a GPU.
    #[test]
    fn saved_engine_sentences_say_the_gpu_not_this_gpu() {
        let s =
            saved_words("this GPU (sm_90) has FP8 tensor cores, which this build does not use yet");
        assert_eq!(
            s,
            "the GPU (sm_90) has FP8 tensor cores, which this build does not use yet"
        );
    }

    #[test]
    fn results_group_by_machine_backend_and_device() {
        let a = Origin::of(Some(&stamp("m1")), "cuda", "NVIDIA H200 (sm_90)", 1);
        let b = Origin::of(Some(&stamp("m1")), "cuda", "NVIDIA H200 (sm_90)", 99);
        let c = Origin::of(Some(&stamp("m2")), "cuda", "NVIDIA H200 (sm_90)", 1);
        let d = Origin::of(Some(&stamp("m1")), "cpu", "AMD EPYC", 1);
        assert_eq!(a.group_key(), b.group_key());
        assert_ne!(a.group_key(), c.group_key());
        assert_ne!(a.group_key(), d.group_key());
    }
}
