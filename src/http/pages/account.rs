//! The account page's sections, in page order: each is a fragment of HTML and an ES module of its
//! own (`assets/pages/account/<id>.html` and `.js`), so that a new part of the account is a new
//! pair of files and one line here, and no section's code is in another's way.
//!
//! To add a section (connected applications, organisations, API keys, linked identities …):
//!
//! 1. write `assets/pages/account/<id>.html`: one `<section id="<id>" aria-labelledby="<id>-title">`
//!    with an `<h2 id="<id>-title">`, its actions each in a `data-messages` block that ends with
//!    its own `.status` and `.alert` (see `sessions.html`: messages appear beside their action);
//! 2. write `assets/pages/account/<id>.js`: `section({ id, show(me), load() })` from
//!    `/assets/pages/account.js` (see `sessions.js`): `show` runs each time the account is
//!    (re)read, `load` once after the first read;
//! 3. add `section!("<id>", "Title in the navigation")` to `SECTIONS` below.
//!
//! The navigation, the `<script>` tags and the asset routes follow from `SECTIONS` (and the pages
//! test checks every script the page loads). A sensitive action calls `confirmed(...)` from account.js, which asks for
//! the password (and a code) once for a few minutes (docs/api.md §3, re-authentication).

/// One section of the account page.
pub struct Section {
    /// The anchor (`/account#<id>`), the file names, the `<section>`'s id.
    pub id: &'static str,
    /// Its name in the page's navigation.
    pub title: &'static str,
    /// The `<section>` element, a minijinja template seeing the page's context.
    pub html: &'static str,
    /// Its ES module, served at `/assets/pages/account/<id>.js`.
    pub script: &'static str,
}

macro_rules! section {
    ($id:literal, $title:literal) => {
        Section {
            id: $id,
            title: $title,
            html: include_str!(concat!("../../../assets/pages/account/", $id, ".html")),
            script: include_str!(concat!("../../../assets/pages/account/", $id, ".js")),
        }
    };
}

pub const SECTIONS: &[Section] = &[
    section!("profile", "Profile"),
    section!("security", "Security"),
    section!("identities", "Sign-in providers"),
    section!("sessions", "Sessions"),
    section!("apps", "Connected applications"),
    section!("keys", "API keys"),
    section!("orgs", "Organisations"),
    section!("delete", "Delete account"),
];

/// The template name of a section's fragment.
pub fn template_name(section: &Section) -> String {
    format!("account/{}.html", section.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_is_a_section_element_with_its_heading() {
        for s in SECTIONS {
            let opening = format!("<section id=\"{0}\" aria-labelledby=\"{0}-title\"", s.id);
            assert!(s.html.trim_start().starts_with(&opening), "{}", s.id);
            assert!(
                s.html.contains(&format!("<h2 id=\"{}-title\"", s.id)),
                "{}",
                s.id
            );
            assert!(s.script.contains(&format!("id: \"{}\"", s.id)), "{}", s.id);
        }
    }
}
