//! The page: plain HTML, CSS and JavaScript files embedded in the library
//! (no build step, nothing fetched from elsewhere).

/// An embedded file: its name under `/assets/`, content type, bytes.
pub struct Asset {
    /// The name in the URL.
    pub name: &'static str,
    /// Its content type.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: &'static str,
}

/// The page itself; `{{TOKEN}}` is replaced by the server's token.
pub const INDEX_HTML: &str = include_str!("../assets/index.html");

/// Every file the page loads. Nothing else is served.
pub const ASSETS: &[Asset] = &[
    Asset { name: "style.css", content_type: "text/css; charset=utf-8", body: include_str!("../assets/style.css") },
    Asset { name: "util.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/util.js") },
    Asset { name: "views.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/views.js") },
    Asset { name: "timeline.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/timeline.js") },
    Asset { name: "flame.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/flame.js") },
    Asset { name: "dumps.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/dumps.js") },
    Asset { name: "leaks.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/leaks.js") },
    Asset { name: "live.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/live.js") },
    Asset { name: "counters.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/counters.js") },
    Asset { name: "app.js", content_type: "text/javascript; charset=utf-8", body: include_str!("../assets/app.js") },
];

/// The asset of this name, if it is one.
pub fn find(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}
