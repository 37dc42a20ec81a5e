//! This machine's stamp on the results it makes: its host name, a hash of its machine ID, the
//! build and the NVIDIA driver ([`showdown_core::origin`] holds the model and decides what is
//! "this machine").

use sha2::{Digest, Sha256};
use showdown_core::origin::{BuildInfo, MachineId, Stamp};

/// Where the stable machine ID is read, in order (systemd's, then D-Bus's).
const MACHINE_ID_FILES: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

/// This machine: its host name, and the first 16 hex digits of SHA-256 over
/// `showdown:` + its machine ID (the raw ID never leaves the machine), or over its host name
/// where no machine ID can be read.
pub fn this_machine() -> MachineId {
    let host = host_name();
    let raw = MACHINE_ID_FILES
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("host:{host}"));
    MachineId {
        id: hashed(&raw),
        host,
    }
}

/// The host name (`/proc/sys/kernel/hostname`, `/etc/hostname`, `$HOSTNAME`), or empty.
fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// 16 hex digits of SHA-256 over `showdown:` + `raw`.
fn hashed(raw: &str) -> String {
    let digest = Sha256::digest(format!("showdown:{raw}").as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The build: the version, and the git commit when the build was given one
/// (`SHOWDOWN_GIT_COMMIT` at compile time).
pub fn this_build() -> BuildInfo {
    BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: option_env!("SHOWDOWN_GIT_COMMIT")
            .map(str::to_string)
            .filter(|c| !c.is_empty()),
    }
}

/// The NVIDIA driver's version from `/proc/driver/nvidia/version` (`580.95.05`), if loaded.
pub fn nvidia_driver() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    driver_of(&text)
}

/// The version in the first line of `/proc/driver/nvidia/version`: the first word that is
/// digits and dots after "Kernel Module".
fn driver_of(text: &str) -> Option<String> {
    let line = text.lines().next()?;
    let after = line.split("Kernel Module").nth(1).unwrap_or(line);
    after
        .split_whitespace()
        .find(|w| w.contains('.') && w.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(str::to_string)
}

/// The stamp of a result made now on `backend` (`cpu`, `cuda`): the machine, the build and,
/// on the GPU, the driver.
pub fn stamp(backend: &str) -> Stamp {
    Stamp {
        machine: this_machine(),
        build: this_build(),
        driver: if backend == "cuda" {
            nvidia_driver()
        } else {
            None
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_id_is_stable_and_hashed() {
        let (a, b) = (this_machine(), this_machine());
        assert_eq!(a, b);
        assert_eq!(a.id.len(), 16);
        assert!(a.id.chars().all(|c| c.is_ascii_hexdigit()));
        for p in MACHINE_ID_FILES {
            if let Ok(raw) = std::fs::read_to_string(p) {
                assert!(!a.id.contains(raw.trim()) || raw.trim().is_empty());
            }
        }
        assert_ne!(hashed("a"), hashed("b"));
    }

    #[test]
    fn the_driver_version_is_read_from_the_kernel_modules_line() {
        let text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Sep 23 09:01:22 UTC 2025\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(driver_of(text).as_deref(), Some("580.95.05"));
        assert_eq!(driver_of("garbage"), None);
    }

    #[test]
    fn a_cpu_stamp_has_no_driver() {
        let s = stamp("cpu");
        assert_eq!(s.driver, None);
        assert_eq!(s.build.version, env!("CARGO_PKG_VERSION"));
    }
}
