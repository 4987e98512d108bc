//! JUnit XML for CI: one testsuite per input, one testcase per connection or demo, one
//! failure per finding.
use std::fmt::Write;

use super::FileCheck;
use crate::sink::markup::escape as esc;

/// The whole report.
pub fn render(files: &[FileCheck]) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let tests: usize = files.iter().map(cases).sum();
    let failures: usize = files.iter().map(failed_cases).sum();
    let _ = writeln!(
        x,
        "<testsuites name=\"quakecap check\" tests=\"{tests}\" failures=\"{failures}\">"
    );
    for f in files {
        suite(&mut x, f);
    }
    x.push_str("</testsuites>\n");
    x
}

/// Test cases of a file: its connections/demos, plus one for findings of no flow.
fn cases(f: &FileCheck) -> usize {
    f.units.len().max(1)
        + usize::from(f.findings.iter().any(|g| g.flow.is_none()) && !f.units.is_empty())
}

fn failed_cases(f: &FileCheck) -> usize {
    let mut n = f
        .units
        .iter()
        .filter(|(id, _)| f.findings.iter().any(|g| g.flow == Some(*id)))
        .count();
    if f.findings
        .iter()
        .any(|g| g.flow.is_none() || !f.units.iter().any(|u| Some(u.0) == g.flow))
    {
        n += 1;
    }
    n.min(cases(f))
}

fn suite(x: &mut String, f: &FileCheck) {
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\">",
        esc(&f.file),
        cases(f),
        failed_cases(f)
    );
    for (id, label) in &f.units {
        let mine: Vec<_> = f.findings.iter().filter(|g| g.flow == Some(*id)).collect();
        case(x, &f.file, label, &mine);
    }
    let rest: Vec<_> = f
        .findings
        .iter()
        .filter(|g| g.flow.is_none() || !f.units.iter().any(|u| Some(u.0) == g.flow))
        .collect();
    if f.units.is_empty() || !rest.is_empty() {
        case(x, &f.file, "file", &rest);
    }
    x.push_str("  </testsuite>\n");
}

fn case(x: &mut String, file: &str, name: &str, findings: &[&super::Finding]) {
    let _ = write!(
        x,
        "    <testcase classname=\"{}\" name=\"{}\"",
        esc(file),
        esc(name)
    );
    if findings.is_empty() {
        x.push_str("/>\n");
        return;
    }
    x.push_str(">\n");
    for g in findings {
        let _ = writeln!(
            x,
            "      <failure type=\"{}\" message=\"{}\">{}</failure>",
            g.rule,
            esc(&g.message),
            esc(&super::line(g))
        );
    }
    x.push_str("    </testcase>\n");
}
