//! The manifests file decoder (`source::manifests`): any text either decodes
//! (objects, with a warning per skipped document) or is one error; never a
//! panic. The whole-file check and the one-object-at-a-time decode must agree.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = source::manifests::parse(text);
    let checked = source::manifests::Checked::new("<fuzz>", text.to_string());
    assert_eq!(parsed.is_ok(), checked.is_ok(), "parse and Checked::new disagree");
    if let (Ok(parsed), Ok(checked)) = (parsed, checked) {
        let mut count = 0;
        let warnings = checked.for_each_object(|_| count += 1);
        let objects = &parsed.objects;
        let total = objects.services.len() + objects.endpoint_slices.len() + objects.nodes.len() + objects.service_cidrs.len();
        assert_eq!(count, total, "streamed and collected decodes disagree");
        assert_eq!(warnings.len(), parsed.warnings.len());
        for warning in &parsed.warnings {
            let _ = warning.to_string();
        }
    }
});
