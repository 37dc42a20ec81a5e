//! The Python interpreters a door offers for the PyTorch peer (`peer_pythons`), and whether it
//! takes any other path (issue 38, defect 5: over HTTP only the interpreters the server found).

use serde::{Deserialize, Serialize};

/// One interpreter the service found, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownPython {
    /// The interpreter as `peer_set_python` takes it (`python3`, a path).
    pub python: String,
    /// Where it was found: `PATH`, `peer venv`, `SHOWDOWN_PYTHON`, `--python` or `setting`.
    pub source: String,
}

/// The answer to [`PeerPythonsRequest`](crate::protocol::PeerPythonsRequest): the interpreters a
/// client may choose through this door.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerPythons {
    /// The interpreters found, each naming an executable file, without repeats.
    pub pythons: Vec<KnownPython>,
    /// Whether this door also takes a path of the client's own: `true` for the CLI, the stdio
    /// sidecar and the desktop app; `false` over HTTP, where `peer_set_python` accepts only
    /// [`pythons`](Self::pythons).
    pub any_path: bool,
}
