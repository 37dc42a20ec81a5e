use super::*;

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
        e.contains("Gif image; screenshots must be PNG or JPEG"),
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
    assert_eq!(listing.skipped[0].id, bad.id);
    assert!(
        listing.skipped[0]
            .reason
            .contains("meta.json: damaged store file"),
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
