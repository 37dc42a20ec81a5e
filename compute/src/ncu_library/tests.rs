use super::*;
use crate::error::ComputeError;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("core/tests/data/ncu")
        .join(name)
}

fn imported(store: &ImportStore, name: &str) -> ImportSummary {
    let path = data(name);
    let report = ncu::import_file(&path).unwrap();
    store.save(&path, &report).unwrap()
}

/// A `w`×`h` image with a gradient, encoded in `format`.
fn image_bytes(w: u32, h: u32, format: image::ImageFormat) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 128]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn png(w: u32, h: u32) -> Vec<u8> {
    image_bytes(w, h, image::ImageFormat::Png)
}

#[test]
fn an_import_is_kept_once_and_read_back() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let a = imported(&store, "details_legacy_human.csv");
    assert_eq!(a.id.len(), 16);
    assert_eq!(a.source_name, "details_legacy_human.csv");
    assert_eq!(a.format, Format::Details);
    assert!(a.kernels >= 1);
    // The same file again: the same import, not a second one.
    let again = imported(&store, "details_legacy_human.csv");
    assert_eq!(again.id, a.id);
    let b = imported(&store, "ours_raw.csv");
    assert_ne!(b.id, a.id);
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&a.id) && ids.contains(&b.id));
    let (summary, report) = store.load(&b.id).unwrap();
    assert_eq!(summary.format, Format::Raw);
    assert_eq!(report, ncu::import_file(&data("ours_raw.csv")).unwrap());
    store.remove(&a.id).unwrap();
    assert_eq!(store.list().unwrap().len(), 1);
    assert!(matches!(
        store.summary(&a.id),
        Err(StoreError::UnknownImport { .. })
    ));
}

#[test]
fn screenshots_attach_to_panels_and_survive_a_restart() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let (_, report) = store.load(&imp.id).unwrap();
    let k = &report.kernels[1];
    let shot = store
        .attach(
            &imp.id,
            Some(k.id),
            "occupancy",
            "/home/me/occ.png",
            &png(40, 30),
            None,
        )
        .unwrap();
    assert_eq!(
        (
            shot.format,
            shot.width,
            shot.height,
            shot.original_name.as_str()
        ),
        (ImageFormat::Png, 40, 30, "occ.png")
    );
    let jpg = image_bytes(64, 48, image::ImageFormat::Jpeg);
    let all = store
        .attach(
            &imp.id,
            None,
            "throughput",
            "sol.jpg",
            &jpg,
            Some("<b>SOL</b> before"),
        )
        .unwrap();
    assert_eq!(all.format, ImageFormat::Jpeg);
    assert!(store.screenshot_path(&imp.id, &all).unwrap().is_file());

    // A new store on the same folder (the sidecar restarted) sees both.
    let reopened = ImportStore::open(t.path()).unwrap();
    let s = reopened.summary(&imp.id).unwrap();
    assert_eq!(s.screenshots.len(), 2);
    let panels = ncu::build_panels_with(k, &s.screenshots);
    let by_id = |id: &str| panels.iter().find(|p| p.id == id).unwrap();
    assert_eq!(by_id("occupancy").screenshots, vec![shot.clone()]);
    assert_eq!(by_id("throughput").screenshots, vec![all.clone()]);
    assert_eq!(
        by_id("throughput").screenshots[0].caption.as_deref(),
        Some("<b>SOL</b> before"),
        "captions are kept as data"
    );
    assert!(by_id("launch").screenshots.is_empty());
    // Another kernel shows the every-kernel screenshot but not the first one.
    let other = ncu::build_panels_with(&report.kernels[0], &s.screenshots);
    assert!(other
        .iter()
        .find(|p| p.id == "occupancy")
        .unwrap()
        .screenshots
        .is_empty());
    assert_eq!(
        other
            .iter()
            .find(|p| p.id == "throughput")
            .unwrap()
            .screenshots
            .len(),
        1
    );

    reopened.detach(&imp.id, &shot.id).unwrap();
    assert_eq!(reopened.summary(&imp.id).unwrap().screenshots, vec![all]);
    assert!(matches!(
        reopened.detach(&imp.id, &shot.id),
        Err(StoreError::UnknownScreenshot { .. })
    ));
}

#[test]
fn bad_screenshots_are_refused_with_the_reason() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "details_legacy_human.csv");
    let attach = |name: &str, bytes: &[u8]| {
        store
            .attach(&imp.id, None, "launch", name, bytes, None)
            .unwrap_err()
            .to_string()
    };
    let good = png(20, 20);
    let e = attach("cut.png", &good[..good.len() / 2]);
    assert!(e.starts_with("cut.png: not a valid PNG image"), "{e}");
    let e = attach("notes.png", b"just some text, not an image");
    assert_eq!(e, "notes.png: not a PNG or JPEG image");
    let e = attach("anim.gif", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;");
    assert!(
        e.contains("a GIF image; screenshots must be PNG or JPEG"),
        "{e}"
    );
    let e = attach("empty.png", b"");
    assert_eq!(e, "empty.png: the file is empty");
    let mut huge = good.clone();
    huge.resize(MAX_SCREENSHOT_BYTES as usize + 1, 0);
    let e = attach("huge.png", &huge);
    assert!(e.contains("over the 20 MiB limit"), "{e}");
    let e = attach("wide.png", &png(MAX_SCREENSHOT_SIDE + 1, 1));
    assert!(e.starts_with("wide.png: not a valid PNG image"), "{e}");
    let jpg = image_bytes(16, 16, image::ImageFormat::Jpeg);
    let e = attach("cut.jpg", &jpg[..jpg.len() - 40]);
    assert!(e.starts_with("cut.jpg: not a valid JPG image"), "{e}");

    let e = store
        .attach(&imp.id, None, "Occupancy", "a.png", &good, None)
        .unwrap_err();
    assert!(e.to_string().contains("unknown panel 'Occupancy'"), "{e}");
    let e = store
        .attach(&imp.id, Some(999_999), "launch", "a.png", &good, None)
        .unwrap_err();
    assert!(e.to_string().contains("no kernel with ID 999999"), "{e}");
    let e = store
        .attach(
            &imp.id,
            None,
            "launch",
            "a.png",
            &good,
            Some(&"x".repeat(5000)),
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("invalid caption: 5000 characters"),
        "{e}"
    );
    for id in [
        "../../etc/passwd",
        "0123456789ABCDEF",
        "",
        "0123456789abcdef0",
    ] {
        let e = store
            .attach(id, None, "launch", "a.png", &good, None)
            .unwrap_err();
        assert!(matches!(e, StoreError::UnknownImport { .. }), "{id}: {e}");
    }
    // Nothing was stored by any refused attempt.
    assert!(store.summary(&imp.id).unwrap().screenshots.is_empty());
    let kind = ComputeError::from(store.detach(&imp.id, "..").unwrap_err()).kind();
    assert_eq!(kind, crate::ErrorKind::BadInput);
}

#[test]
fn a_damaged_record_is_named() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "details_legacy_human.csv");
    let meta = t.path().join("imports").join(&imp.id).join("meta.json");
    std::fs::write(&meta, b"{ not json").unwrap();
    let e = store.summary(&imp.id).unwrap_err().to_string();
    assert!(e.contains("meta.json: damaged store file"), "{e}");
    // An import folder cut off before its meta.json was written is skipped by list().
    std::fs::create_dir_all(t.path().join("imports/0123456789abcdef")).unwrap();
    std::fs::remove_file(&meta).unwrap();
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn one_damaged_import_does_not_hide_the_others() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let good = imported(&store, "details_legacy_human.csv");
    let bad = imported(&store, "ours_raw.csv");
    let meta = t.path().join("imports").join(&bad.id).join("meta.json");
    std::fs::write(&meta, b"{ not json").unwrap();

    let listing = store.list_checked().unwrap();
    let ids: Vec<&str> = listing.imports.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [good.id.as_str()]);
    assert_eq!(listing.skipped.len(), 1);
    assert!(
        listing.skipped[0].starts_with(&format!("import {} left out: ", bad.id))
            && listing.skipped[0].contains("meta.json: damaged store file"),
        "{:?}",
        listing.skipped
    );
    // The plain list keeps its shape: the readable imports only.
    assert_eq!(store.list().unwrap(), listing.imports);
}

#[test]
fn a_screenshot_reads_back_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let bytes = png(12, 7);
    let shot = store
        .attach(
            &imp.id,
            None,
            "occupancy",
            "occ.png",
            &bytes,
            Some("before"),
        )
        .unwrap();
    let (record, back) = ImportStore::open(t.path())
        .unwrap()
        .screenshot(&imp.id, &shot.id)
        .unwrap();
    assert_eq!(record, shot);
    assert_eq!(back, bytes);
    assert_eq!(record.format.media_type(), "image/png");

    // Unknown or path-like identifiers are refused, naming what was asked for.
    for sid in ["0123456789abcdef", "../../meta", "", "0123456789ABCDEF"] {
        let e = store.screenshot(&imp.id, sid).unwrap_err();
        assert!(
            matches!(e, StoreError::UnknownScreenshot { ref screenshot, .. } if screenshot == sid),
            "{sid}: {e}"
        );
        assert!(e.to_string().contains(&format!("'{sid}'")), "{e}");
    }
    let e = store.screenshot("../imports", &shot.id).unwrap_err();
    assert!(matches!(e, StoreError::UnknownImport { .. }), "{e}");
    // A record whose image is gone is unknown too.
    store.detach(&imp.id, &shot.id).unwrap();
    assert!(matches!(
        store.screenshot(&imp.id, &shot.id),
        Err(StoreError::UnknownScreenshot { .. })
    ));
}

/// Runs `f` on a thread of its own; `None` when it has not answered within 20 s (it hangs:
/// the test fails instead of waiting for ever).
fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).ok()
}

fn import_dir(t: &tempfile::TempDir, id: &str) -> PathBuf {
    t.path().join("imports").join(id)
}

#[test]
fn a_truncated_screenshot_record_drops_only_that_screenshot() {
    // Issue 19: one cut-off screenshot record hid its whole import (the CSV and the intact
    // screenshots) from `ncu_imports`, with a note on the server's stderr only.
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let other = imported(&store, "ours_raw.csv");
    let kept = store
        .attach(&imp.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let cut = store
        .attach(&imp.id, None, "occupancy", "b.png", &png(11, 10), None)
        .unwrap();
    let record = import_dir(&t, &imp.id)
        .join("screenshots")
        .join(format!("{}.json", cut.id));
    let text = std::fs::read(&record).unwrap();
    std::fs::write(&record, &text[..text.len() / 2]).unwrap();

    let listing = store.list_checked().unwrap();
    let ids: Vec<&str> = listing.imports.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids.len(), 2, "both imports are listed: {listing:?}");
    assert!(ids.contains(&imp.id.as_str()) && ids.contains(&other.id.as_str()));
    let listed = listing.imports.iter().find(|i| i.id == imp.id).unwrap();
    assert_eq!(
        listed.screenshots,
        vec![kept.clone()],
        "the intact screenshot stays"
    );
    assert_eq!(listing.skipped.len(), 1, "{:?}", listing.skipped);
    let note = &listing.skipped[0];
    assert!(
        note.starts_with(&format!(
            "import {}: screenshot {} left out: ",
            imp.id, cut.id
        )) && note.contains(&format!("{}.json: damaged store file", cut.id)),
        "{note}"
    );
    // The import still opens, and the damaged screenshot can be removed.
    assert_eq!(store.load(&imp.id).unwrap().0.screenshots, vec![kept]);
    store.detach(&imp.id, &cut.id).unwrap();
    assert!(store.list_checked().unwrap().skipped.is_empty());
    assert!(!import_dir(&t, &imp.id)
        .join("screenshots")
        .join(&cut.stored_name)
        .exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_where_a_record_is_expected_is_skipped_not_waited_on() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let good = imported(&store, "ours_details.csv");
    let bad = imported(&store, "ours_raw.csv");
    let shot = store
        .attach(&good.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let mkfifo = |p: &Path| {
        std::fs::remove_file(p).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap();
        assert!(made.success());
    };
    mkfifo(&import_dir(&t, &bad.id).join("meta.json"));
    mkfifo(
        &import_dir(&t, &good.id)
            .join("screenshots")
            .join(format!("{}.json", shot.id)),
    );
    let s = store.clone();
    let listing = within_20s(move || s.list_checked().unwrap()).expect("the list hung on a FIFO");
    let ids: Vec<&str> = listing.imports.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, [good.id.as_str()]);
    assert!(listing.imports[0].screenshots.is_empty());
    assert_eq!(listing.skipped.len(), 2, "{:?}", listing.skipped);
    for note in &listing.skipped {
        assert!(
            note.contains("a FIFO (named pipe), not a regular file"),
            "{note}"
        );
    }
    let s = store.clone();
    let id = good.id.clone();
    let sid = shot.id.clone();
    let e = within_20s(move || s.screenshot(&id, &sid).unwrap_err()).expect("hung");
    assert!(e.to_string().contains("a FIFO"), "{e}");
    // The import with a FIFO for a record can still be removed.
    store.remove(&bad.id).unwrap();
}

#[cfg(unix)]
#[test]
fn a_symlink_to_dev_zero_is_skipped() {
    // Issue 19: a link to /dev/zero where a record is expected was read until memory ran out.
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let good = imported(&store, "ours_details.csv");
    let bad = imported(&store, "ours_raw.csv");
    let shot = store
        .attach(&good.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let link = |p: PathBuf| {
        std::fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &p).unwrap();
    };
    link(import_dir(&t, &bad.id).join("meta.json"));
    link(
        import_dir(&t, &good.id)
            .join("screenshots")
            .join(&shot.stored_name),
    );
    let s = store.clone();
    let listing = within_20s(move || s.list_checked().unwrap()).expect("read /dev/zero");
    let ids: Vec<&str> = listing.imports.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, [good.id.as_str()]);
    assert!(listing.imports[0].screenshots.is_empty());
    assert_eq!(listing.skipped.len(), 2, "{:?}", listing.skipped);
    for note in &listing.skipped {
        assert!(note.contains("a symbolic link"), "{note}");
    }
    let s = store.clone();
    let (id, sid) = (good.id.clone(), shot.id.clone());
    let e = within_20s(move || s.screenshot(&id, &sid).unwrap_err()).expect("read /dev/zero");
    assert!(
        e.to_string()
            .contains("a symbolic link, not a regular file"),
        "{e}"
    );
    // The stored source as a link: its panels are refused, not read through the link.
    let source = import_dir(&t, &good.id).join("source.csv");
    std::fs::remove_file(&source).unwrap();
    std::os::unix::fs::symlink(data("ours_details.csv"), &source).unwrap();
    let e = store.load(&good.id).unwrap_err().to_string();
    assert!(
        e.contains("source.csv: damaged store file: a symbolic link"),
        "{e}"
    );
    // An import folder that is a link is not followed either.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), import_dir(&t, "0123456789abcdef")).unwrap();
    let listing = store.list_checked().unwrap();
    assert!(
        listing
            .skipped
            .iter()
            .any(|n| n.contains("0123456789abcdef: a symbolic link, not an import's folder")),
        "{:?}",
        listing.skipped
    );
}

#[test]
fn stored_source_outside_the_store_is_refused() {
    // Issue 19: `stored_source` was joined to the import's folder unchecked, so a record
    // naming `../../../etc/passwd` had `ncu_panels` read (and quote) any file.
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let secret = t.path().join("secret.csv");
    std::fs::write(&secret, "top secret first line\n").unwrap();
    let meta_path = import_dir(&t, &imp.id).join("meta.json");
    let original: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    for evil in [
        "../../secret.csv",
        "/etc/passwd",
        "meta.json",
        "source.csv/..",
    ] {
        let mut meta = original.clone();
        meta["stored_source"] = evil.into();
        std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
        let e = store.load(&imp.id).unwrap_err().to_string();
        assert!(
            e.contains("is not a source file of the store") && !e.contains("top secret"),
            "{evil}: {e}"
        );
        let listing = store.list_checked().unwrap();
        assert!(listing.imports.is_empty());
        assert!(listing.skipped[0].contains("stored_source"), "{listing:?}");
        assert_eq!(
            ComputeError::from(store.load(&imp.id).unwrap_err()).kind(),
            crate::ErrorKind::BadInput
        );
    }
    // A record whose id is not its folder's is refused too.
    let mut meta = original.clone();
    meta["id"] = "fedcba9876543210".into();
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let e = store.summary(&imp.id).unwrap_err().to_string();
    assert!(e.contains("is not its folder's"), "{e}");
    // A screenshot record naming another file as its image is left out.
    std::fs::write(&meta_path, serde_json::to_vec(&original).unwrap()).unwrap();
    let shot = store
        .attach(&imp.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let record = import_dir(&t, &imp.id)
        .join("screenshots")
        .join(format!("{}.json", shot.id));
    let mut r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    r["stored_name"] = "../source.csv".into();
    std::fs::write(&record, serde_json::to_vec(&r).unwrap()).unwrap();
    let listing = store.list_checked().unwrap();
    assert!(listing.imports[0].screenshots.is_empty());
    assert!(
        listing.skipped[0].contains("is not its image"),
        "{listing:?}"
    );
    assert!(store.screenshot(&imp.id, &shot.id).is_err());
}

#[test]
fn crash_leftovers_are_removed_at_open() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let shot = store
        .attach(&imp.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let old = SystemTime::now() - std::time::Duration::from_secs(2 * 3600);
    let touch = |p: &Path, contents: &[u8], when: SystemTime| {
        std::fs::write(p, contents).unwrap();
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    let imports = t.path().join("imports");
    let dir = imports.join(&imp.id);
    let shots = dir.join("screenshots");
    // Temporary files of writes a crash cut off, in every folder of the store.
    let old_tmps = [
        imports.join(".tmpAAAAAA"),
        dir.join(".tmpBBBBBB"),
        shots.join(".tmpCCCCCC"),
    ];
    for p in &old_tmps {
        touch(p, b"half", old);
    }
    // An image whose record was never written; an import cut off before its meta.json.
    let orphan_image = shots.join("00000000000000aa.png");
    touch(&orphan_image, b"png", old);
    let cut_import = imports.join("00000000000000bb");
    std::fs::create_dir_all(cut_import.join("screenshots")).unwrap();
    touch(&cut_import.join("source.csv"), b"a,b", old);
    std::fs::File::open(&cut_import)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // Young ones belong to writes in progress (maybe in another process): kept.
    let young = [
        imports.join(".tmpYOUNG1"),
        shots.join("00000000000000cc.png"),
    ];
    for p in &young {
        touch(p, b"new", SystemTime::now());
    }
    let young_import = imports.join("00000000000000dd");
    std::fs::create_dir_all(&young_import).unwrap();

    let reopened = ImportStore::open(t.path()).unwrap();
    for p in old_tmps.iter().chain([&orphan_image, &cut_import]) {
        assert!(!p.exists(), "{} was left", p.display());
    }
    for p in young.iter().chain([&young_import]) {
        assert!(p.exists(), "{} was removed", p.display());
    }
    // The store itself is intact.
    let s = reopened.summary(&imp.id).unwrap();
    assert_eq!(s.screenshots, vec![shot.clone()]);
    assert!(reopened.screenshot(&imp.id, &shot.id).is_ok());
    assert!(dir.join("source.csv").is_file());
}

/// Regression (issue 30): a server killed mid-import left `imports/.tmpXXXX` (13.6 MB) until
/// an hour had passed. The temporary file names its writer; the next open removes it once that
/// process is gone, and keeps one whose writer is alive (this process).
#[cfg(unix)]
#[test]
fn killed_imports_temp_file_is_removed_at_open_and_a_live_ones_stays() {
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imports = t.path().join("imports");
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let dead_tmp = imports.join(format!(".tmp-{dead}-Zx9Yw8"));
    std::fs::write(&dead_tmp, vec![0u8; 1 << 20]).unwrap();
    let live_tmp = imports.join(format!(".tmp-{}-Ab1Cd2", std::process::id()));
    std::fs::write(&live_tmp, b"an import in progress").unwrap();
    drop(store);
    let reopened = ImportStore::open(t.path()).unwrap();
    assert!(!dead_tmp.exists(), "the killed writer's file was left");
    assert!(live_tmp.exists(), "a live writer's file was removed");
    // An import writes through such a file and leaves none of its own behind.
    let imp = imported(&reopened, "ours_details.csv");
    reopened
        .attach(&imp.id, None, "launch", "a.png", &png(10, 10), None)
        .unwrap();
    let temps = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| files::is_temporary(n))
            .collect()
    };
    assert_eq!(
        temps(&imports),
        vec![format!(".tmp-{}-Ab1Cd2", std::process::id())]
    );
    assert!(temps(&imports.join(&imp.id)).is_empty());
    assert!(temps(&imports.join(&imp.id).join("screenshots")).is_empty());
}

/// A PNG of `w`×`h` RGBA pixels, all zero, written by hand (fixed-Huffman deflate: one
/// literal, then matches of 258 bytes at distance 1): a gibibyte of pixels in a few MiB, made
/// without the memory the pixels would take.
fn zero_png(w: u32, h: u32) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }
    impl Bits {
        fn push(&mut self, value: u64, count: u32) {
            self.acc |= value << self.n;
            self.n += count;
            while self.n >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
    }
    // Huffman codes go most significant bit first: reversed into the LSB-first stream.
    let rev =
        |code: u64, len: u32| (0..len).fold(0, |r, i| r | (((code >> i) & 1) << (len - 1 - i)));
    let raw = u64::from(h) * (1 + 4 * u64::from(w));
    let mut b = Bits {
        out: vec![0x78, 0x01],
        acc: 0,
        n: 0,
    };
    b.push(1, 1); // the last block
    b.push(1, 2); // fixed Huffman codes
    b.push(rev(0x30, 8), 8); // literal 0
    let mut left = raw - 1;
    let run = rev(0xC5, 8); // length 258, then distance code 0 (five zero bits)
    while left >= 258 {
        b.push(run, 13);
        left -= 258;
    }
    for _ in 0..left {
        b.push(rev(0x30, 8), 8);
    }
    b.push(0, 7); // end of block
    b.push(0, 7); // to a byte boundary
    let mut zlib = b.out;
    let adler = ((raw % 65521) << 16) | 1; // Adler-32 of zeros
    zlib.extend_from_slice(&(adler as u32).to_be_bytes());
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        png.extend_from_slice(&crc.sum().to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &zlib);
    chunk(b"IEND", &[]);
    png
}

#[test]
fn the_hand_made_png_decodes() {
    let p = zero_png(300, 7);
    let img = image::load_from_memory(&p).unwrap();
    assert_eq!((img.width(), img.height()), (300, 7));
    assert!(img.to_rgba8().iter().all(|&b| b == 0));
    assert_eq!(
        validate_image("z.png", &p).unwrap(),
        (ImageFormat::Png, 300, 7)
    );
}

#[test]
fn an_image_bomb_is_refused_from_its_header() {
    // Issue 19: a small PNG declaring 16384×16384 RGBA was within the limits and decoded to
    // a gibibyte; ten at once exhausted memory and the process aborted.
    let bomb = zero_png(16_384, 16_384);
    assert!(bomb.len() < 10 << 20, "{} bytes", bomb.len());
    let start = std::time::Instant::now();
    let e = validate_image("bomb.png", &bomb).unwrap_err();
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("bomb.png: declares 16384×16384 pixels")
            && msg.contains("1024 MiB once decoded: over the 256 MiB a screenshot may take"),
        "{msg}"
    );
    assert_eq!(ComputeError::from(e).kind(), crate::ErrorKind::BadInput);
}

#[test]
fn concurrent_decodes_share_one_budget() {
    use decode::DecodeBudget;
    let image = png(64, 64); // 12 KiB decoded (RGB)
    let budget = DecodeBudget::new(16 << 10);
    let wait = std::time::Duration::ZERO;
    assert!(validate_image_in(&budget, wait, "a.png", &image).is_ok());
    assert_eq!(budget.in_use(), 0, "a decode gives its share back");
    // Another decode holds most of the budget: this one is refused as busy, with the reason.
    let held = budget.take(10 << 10, wait).unwrap();
    let e = validate_image_in(&budget, wait, "b.png", &image).unwrap_err();
    assert!(matches!(e, StoreError::Busy { .. }), "{e}");
    let e = ComputeError::from(e);
    assert_eq!(e.kind(), crate::ErrorKind::Busy);
    assert!(e.to_string().contains("decode budget"), "{e}");
    drop(held);
    assert!(validate_image_in(&budget, wait, "b.png", &image).is_ok());
    // Ten threads at once on a budget of two images: each decodes or is refused as busy,
    // and the budget is never overdrawn.
    let budget = std::sync::Arc::new(DecodeBudget::new(2 * 64 * 64 * 3));
    let image = std::sync::Arc::new(image);
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let (budget, image) = (budget.clone(), image.clone());
            std::thread::spawn(move || {
                validate_image_in(&budget, std::time::Duration::from_secs(10), "c.png", &image)
                    .map(|_| ())
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(budget.in_use(), 0);
}

/// A `w`×`h` grey JPEG (baseline, the image crate's encoder) whose header then declares
/// `declared_w`×`declared_h`: the data of a small image under the header of a large one.
fn doctored_jpeg(w: u32, h: u32, declared_w: u16, declared_h: u16) -> Vec<u8> {
    let img = image::GrayImage::from_fn(w, h, |x, y| image::Luma([(x * 7 + y * 13) as u8]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    let mut bytes = out.into_inner();
    // SOF0: FF C0, its length (2 bytes), the precision, then the height and the width.
    let sof = bytes.windows(2).position(|m| m == [0xFF, 0xC0]).unwrap();
    bytes[sof + 5..sof + 7].copy_from_slice(&declared_h.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&declared_w.to_be_bytes());
    bytes
}

/// Regression (issue 30): a JPEG whose header declares 9000×9000 but holds 16×16 of data was
/// stored as a 9000×9000 screenshot (the decoder padded the rest with grey).
#[test]
fn jpeg_declaring_9000x9000_with_16x16_of_data_is_refused_naming_the_sizes() {
    // 390 bytes; the image crate alone reads it as 9000×9000, the rest padded.
    let jpg = doctored_jpeg(16, 16, 9000, 9000);
    let budget = decode::DecodeBudget::new(1 << 30);
    let start = std::time::Instant::now();
    let e = validate_image_in(&budget, std::time::Duration::ZERO, "big.jpg", &jpg).unwrap_err();
    assert!(
        start.elapsed() < std::time::Duration::from_secs(2),
        "refused only after {:?}",
        start.elapsed()
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("big.jpg: its header declares 9000×9000 pixels, but it holds ")
            && msg.contains("bytes of image data, too few for that size"),
        "{msg}"
    );
    assert_eq!(ComputeError::from(e).kind(), crate::ErrorKind::BadInput);
    assert_eq!(budget.in_use(), 0);
    // Through the store: refused, nothing kept.
    let t = tempfile::tempdir().unwrap();
    let store = ImportStore::open(t.path()).unwrap();
    let imp = imported(&store, "ours_details.csv");
    let e = store
        .attach(&imp.id, None, "launch", "big.jpg", &jpg, None)
        .unwrap_err();
    assert!(e.to_string().contains("9000×9000"), "{e}");
    assert!(store.summary(&imp.id).unwrap().screenshots.is_empty());
    // The same data under its own header, and a colour JPEG, are whole: kept at their size.
    assert_eq!(
        validate_image("small.jpg", &doctored_jpeg(16, 16, 16, 16)).unwrap(),
        (ImageFormat::Jpeg, 16, 16)
    );
    assert_eq!(
        validate_image("photo.jpg", &image_bytes(64, 48, image::ImageFormat::Jpeg)).unwrap(),
        (ImageFormat::Jpeg, 64, 48)
    );
}

/// A JPEG whose data holds enough bits for its size but ends before its last row (a file
/// cut short, its end marker gone) is refused by the strict decode, naming the sizes.
#[test]
fn jpeg_cut_before_its_last_row_is_refused() {
    let img = image::RgbImage::from_fn(256, 256, |x, y| {
        let v = (x * 31 + y * 17 + (x * y) % 251) as u8;
        image::Rgb([v, v.wrapping_mul(3), v ^ 0x5A])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    let whole = out.into_inner();
    assert!(validate_image("whole.jpg", &whole).is_ok());
    let cut = &whole[..whole.len() * 9 / 10];
    let e = validate_image("cut.jpg", cut).unwrap_err().to_string();
    assert!(
        e.starts_with("cut.jpg: its header declares 256×256 pixels, but its data does not decode"),
        "{e}"
    );
}

/// A PNG whose header declares more rows than its data holds is refused too (the PNG decoder
/// reads every row it was promised: this held before issue 30, and is kept).
#[test]
fn png_declaring_more_than_its_data_is_refused() {
    let mut p = png(16, 16);
    // IHDR's data starts after the signature (8), the length (4) and the type (4).
    p[16..20].copy_from_slice(&2000u32.to_be_bytes());
    p[20..24].copy_from_slice(&2000u32.to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(&p[12..29]);
    p[29..33].copy_from_slice(&crc.sum().to_be_bytes());
    let e = validate_image("big.png", &p).unwrap_err().to_string();
    assert!(e.starts_with("big.png: not a valid PNG image"), "{e}");
}
