//! The book (`docs/`, built with `mdbook build docs`) and the README hold together: every chapter
//! the summary names exists, and every relative link of the README and of every chapter reaches a
//! file of the repository, and, with a `#fragment`, a heading of that file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The id mdBook (and GitHub) gives a heading: lower case, punctuation dropped, spaces to `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a Markdown file outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

fn headings(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    prose(&text)
        .into_iter()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every link target of a Markdown file: `[text](target)`, `src="target"`, `{{#include target}}`.
fn targets(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in prose(text) {
        for (open, close) in [("](", ')'), ("src=\"", '"'), ("{{#include ", '}')] {
            let mut rest = line;
            while let Some(at) = rest.find(open) {
                rest = &rest[at + open.len()..];
                if let Some(end) = rest.find(close) {
                    found.push(rest[..end].trim().to_owned());
                }
            }
        }
    }
    found
}

fn check(file: &Path, problems: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    for target in targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (target.as_str(), None),
        };
        let resolved: PathBuf = if path.is_empty() {
            file.to_owned()
        } else {
            dir.join(path)
        };
        let shown = file.strip_prefix(ROOT).unwrap_or(file).display();
        if !resolved.exists() {
            problems.push(format!("{shown}: {target}: no such file"));
            continue;
        }
        if let Some(fragment) = fragment {
            let is_markdown = resolved.extension().is_some_and(|e| e == "md");
            if is_markdown && !headings(&resolved).contains(fragment) {
                problems.push(format!("{shown}: {target}: no such heading"));
            }
        }
    }
}

#[test]
fn every_link_of_the_book_and_the_readme_reaches_its_target() {
    let docs = Path::new(ROOT).join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).unwrap();
    let mut chapters: Vec<PathBuf> = targets(&summary).iter().map(|t| docs.join(t)).collect();
    assert!(chapters.len() >= 10, "the summary names its chapters");
    chapters.push(docs.join("SUMMARY.md"));
    chapters.push(Path::new(ROOT).join("README.md"));
    let mut problems = Vec::new();
    for chapter in &chapters {
        assert!(chapter.exists(), "{} is in the summary", chapter.display());
        check(chapter, &mut problems);
    }
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_readme_stays_short() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: the rest belongs in the book"
    );
}

#[test]
fn headings_become_the_ids_mdbook_gives_them() {
    assert_eq!(
        slug(" Behind nginx, Caddy or Traefik"),
        "behind-nginx-caddy-or-traefik"
    );
    assert_eq!(slug("What is stored, and how"), "what-is-stored-and-how");
    assert_eq!(slug("§6b Browser sessions"), "6b-browser-sessions");
}
