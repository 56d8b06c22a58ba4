//! A client's name, as the consent page shows it: what it may hold, and when two names read as
//! one (a self-registered client may not take the name of an operator's, docs/api.md §11).

/// Longest client name, in characters (it is shown on the consent page and in lists).
pub const NAME_MAX: usize = 200;

pub(super) fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(format!("must be 1 to {NAME_MAX} characters"));
    }
    if name.chars().any(unseen) {
        return Err(
            "must not hold control, invisible or direction-changing characters (U+202E and the \
             like): the consent page shows the name as it is"
                .into(),
        );
    }
    Ok(name.to_owned())
}

/// A character a name must not hold: controls, format characters (zero-width ones, and the
/// bidirectional overrides that make "Acme\u{202E}lapyaP" read as another name), line and
/// paragraph separators, private-use and unassigned code points. They draw nothing, or redraw
/// what follows, so a name holding one can pass for another client's on the consent page.
fn unseen(c: char) -> bool {
    use unicode_properties::{GeneralCategory as G, UnicodeGeneralCategory as _};
    matches!(
        c.general_category(),
        G::Control
            | G::Format
            | G::LineSeparator
            | G::ParagraphSeparator
            | G::PrivateUse
            | G::Surrogate
            | G::Unassigned
    )
}

/// A name as people read it, for comparing two: compatibility forms folded (NFKC: fullwidth
/// letters, ligatures), case ignored, spaces dropped. "Ａｃｍｅ  Billing" and "acme billing" are
/// one name. (Look-alike letters of other scripts are not folded: the consent page names the
/// host the browser returns to, and a self-registered client as such.)
pub(super) fn name_skeleton(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization as _;
    name.nfkc()
        .flat_map(char::to_lowercase)
        .filter(|c| !c.is_whitespace())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_alike_when_people_would_read_them_alike() {
        assert_eq!(
            name_skeleton("Ａｃｍｅ  Billing"),
            name_skeleton("acme billing")
        );
        assert_ne!(
            name_skeleton("Acme Billing"),
            name_skeleton("Acme Billing 2")
        );
    }
}
