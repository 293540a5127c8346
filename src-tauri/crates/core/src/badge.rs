//! The tray icon image: a connector glyph tinted by the worst state, with the number needing
//! attention drawn on it (a count on the icon, for platforms whose trays have no badge).
//!
//! Everything is drawn here, without an image library: a rounded tile in the state's tint, a white
//! plug on it, and, when something needs attention, a red disc in the top-right corner (cut out of
//! the tile by a transparent ring) carrying the count in a 3x5 bitmap font ("9+" above nine).
//! Shapes are sampled 4x4 per pixel; the digits are aligned to whole pixels so they stay crisp.

use patchbay_status::{ConnectorState, StatusReport};

/// An RGBA image, row-major, `width * height * 4` bytes.
pub struct BadgeImage {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

impl BadgeImage {
    /// The RGBA value of the pixel at (`x`, `y`).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }
}

/// Everything fine (ready, no credential required).
pub const GREEN: [u8; 3] = [0x2f, 0x9e, 0x5f];
/// Empty catalog: nothing to show.
pub const GREY: [u8; 3] = [0x86, 0x8e, 0x96];
/// A token expired; it refreshes by itself when a refresh token exists.
pub const BLUE: [u8; 3] = [0x2f, 0x78, 0xd6];
/// The user has something to do (authorize, re-authorize, configure, edit the catalog).
pub const AMBER: [u8; 3] = [0xd9, 0x8a, 0x06];
/// Something is broken (the secret store, a probe).
pub const RED: [u8; 3] = [0xd6, 0x3b, 0x3b];
/// The count disc.
pub const BADGE: [u8; 3] = [0xe5, 0x25, 0x2a];
/// The application icon's tint (the same glyph, not tied to a state).
pub const BRAND: [u8; 3] = [0x4a, 0x4f, 0xd8];

const WHITE: [u8; 3] = [0xff, 0xff, 0xff];

/// The tint for the worst state; `None` (an empty catalog) is grey.
pub fn tint(worst: Option<ConnectorState>) -> [u8; 3] {
    use ConnectorState::*;
    match worst {
        None => GREY,
        Some(Ready | NoCredentialRequired) => GREEN,
        Some(TokenExpired) => BLUE,
        Some(NeedsAuthorization | NeedsReauth | MissingConfiguration | Unavailable) => AMBER,
        Some(ProbeFailed | SecretStoreUnreachable) => RED,
    }
}

/// The tint for a report: a degraded connector (its checks keep failing) is something broken,
/// red, whatever the worst state says; otherwise [`tint`] of the worst state.
pub fn tint_for(worst: Option<ConnectorState>, degraded: usize) -> [u8; 3] {
    if degraded > 0 {
        RED
    } else {
        tint(worst)
    }
}

/// The tray icon for a report: tinted by [`tint_for`], counting `need_attention` (degraded
/// connectors included).
pub fn render_report(report: &StatusReport, size: u32) -> BadgeImage {
    render_tinted(
        tint_for(report.worst, report.degraded),
        report.need_attention,
        size,
    )
}

/// The text drawn on the count disc: nothing for 0, the digit up to 9, then "9+".
pub fn badge_text(need_attention: usize) -> Option<String> {
    match need_attention {
        0 => None,
        1..=9 => Some(need_attention.to_string()),
        _ => Some("9+".to_string()),
    }
}

/// Render the tray icon at `size` x `size` pixels.
pub fn render(worst: Option<ConnectorState>, need_attention: usize, size: u32) -> BadgeImage {
    render_tinted(tint(worst), need_attention, size)
}

/// Render the glyph on a tile of any tint (the app icon uses [`BRAND`]), with the count disc
/// when `need_attention > 0`.
pub fn render_tinted(tint: [u8; 3], need_attention: usize, size: u32) -> BadgeImage {
    let size = size.max(8);
    let mut c = Canvas::new(size);
    let s = size as f32;

    // The tile.
    c.fill(tint, |u, v| {
        rounded_rect(u, v, 0.06, 0.06, 0.94, 0.94, 0.22)
    });
    // The plug: two prongs, a body with rounded corners, a cable.
    c.fill(WHITE, |u, v| {
        rect(u, v, 0.365, 0.19, 0.445, 0.40)
            || rect(u, v, 0.555, 0.19, 0.635, 0.40)
            || rounded_rect(u, v, 0.29, 0.36, 0.71, 0.64, 0.10)
            || rect(u, v, 0.455, 0.62, 0.545, 0.83)
    });

    if let Some(text) = badge_text(need_attention) {
        let (cx, cy, r) = (0.74 * s, 0.26 * s, 0.25 * s);
        let ring = (0.05 * s).max(1.0);
        c.erase(|x, y| disc(x, y, cx, cy, r + ring));
        c.fill_px(BADGE, |x, y| disc(x, y, cx, cy, r));

        // Whole-pixel cells, as large as fit the disc.
        let cols = text.chars().count() * 4 - 1;
        let by_height = (2.0 * r * 0.62 / 5.0).floor();
        let by_width = (2.0 * r * 0.78 / cols as f32).floor();
        let cell = by_height.min(by_width).max(1.0);
        let x0 = (cx - cell * cols as f32 / 2.0).round();
        let y0 = (cy - cell * 5.0 / 2.0).round();
        c.fill_px(WHITE, |x, y| {
            let col = ((x - x0) / cell).floor();
            let row = ((y - y0) / cell).floor();
            if !(0.0..5.0).contains(&row) || !(0.0..cols as f32).contains(&col) {
                return false;
            }
            let (col, row) = (col as usize, row as usize);
            let Some(ch) = text.chars().nth(col / 4) else {
                return false;
            };
            col % 4 != 3 && glyph(ch)[row] & (0b100 >> (col % 4)) != 0
        });
    }
    c.finish()
}

/// A 3x5 bitmap glyph, one row per entry, the high bit leftmost.
fn glyph(ch: char) -> [u8; 5] {
    match ch {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b001, 0b001, 0b001],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        '+' => [0b000, 0b010, 0b111, 0b010, 0b000],
        _ => [0; 5],
    }
}

fn rect(u: f32, v: f32, x0: f32, y0: f32, x1: f32, y1: f32) -> bool {
    u >= x0 && u < x1 && v >= y0 && v < y1
}

fn rounded_rect(u: f32, v: f32, x0: f32, y0: f32, x1: f32, y1: f32, r: f32) -> bool {
    if !rect(u, v, x0, y0, x1, y1) {
        return false;
    }
    let dx = (x0 + r - u).max(u - (x1 - r)).max(0.0);
    let dy = (y0 + r - v).max(v - (y1 - r)).max(0.0);
    dx * dx + dy * dy <= r * r
}

fn disc(x: f32, y: f32, cx: f32, cy: f32, r: f32) -> bool {
    let (dx, dy) = (x - cx, y - cy);
    dx * dx + dy * dy <= r * r
}

/// Premultiplied RGBA in 0..=1, painted with coverage from 4x4 samples per pixel.
struct Canvas {
    size: u32,
    px: Vec<[f32; 4]>,
}

const SAMPLES: u32 = 4;

impl Canvas {
    fn new(size: u32) -> Canvas {
        Canvas {
            size,
            px: vec![[0.0; 4]; (size * size) as usize],
        }
    }

    /// The fraction of pixel (`x`, `y`) inside `shape`, sampled in pixel coordinates.
    fn coverage_px(x: u32, y: u32, shape: &impl Fn(f32, f32) -> bool) -> f32 {
        let mut hits = 0;
        for j in 0..SAMPLES {
            for i in 0..SAMPLES {
                let sx = x as f32 + (i as f32 + 0.5) / SAMPLES as f32;
                let sy = y as f32 + (j as f32 + 0.5) / SAMPLES as f32;
                if shape(sx, sy) {
                    hits += 1;
                }
            }
        }
        hits as f32 / (SAMPLES * SAMPLES) as f32
    }

    /// Paint `color` over the canvas where `shape`, in unit coordinates (0..1), holds.
    fn fill(&mut self, color: [u8; 3], shape: impl Fn(f32, f32) -> bool) {
        self.paint(color, &shape, true);
    }

    /// Paint `color` over the canvas where `shape`, in pixel coordinates, holds.
    fn fill_px(&mut self, color: [u8; 3], shape: impl Fn(f32, f32) -> bool) {
        self.paint(color, &shape, false);
    }

    fn paint(&mut self, color: [u8; 3], shape: &impl Fn(f32, f32) -> bool, unit: bool) {
        let s = self.size as f32;
        let src = color.map(|c| c as f32 / 255.0);
        for y in 0..self.size {
            for x in 0..self.size {
                let cov = if unit {
                    Self::coverage_px(x, y, &|px, py| shape(px / s, py / s))
                } else {
                    Self::coverage_px(x, y, shape)
                };
                if cov > 0.0 {
                    let p = &mut self.px[(y * self.size + x) as usize];
                    for k in 0..3 {
                        p[k] = src[k] * cov + p[k] * (1.0 - cov);
                    }
                    p[3] = cov + p[3] * (1.0 - cov);
                }
            }
        }
    }

    /// Make the canvas transparent where `shape` (in pixel coordinates) holds.
    fn erase(&mut self, shape: impl Fn(f32, f32) -> bool) {
        for y in 0..self.size {
            for x in 0..self.size {
                let cov = Self::coverage_px(x, y, &shape);
                if cov > 0.0 {
                    let p = &mut self.px[(y * self.size + x) as usize];
                    for c in p.iter_mut() {
                        *c *= 1.0 - cov;
                    }
                }
            }
        }
    }

    fn finish(self) -> BadgeImage {
        let mut rgba = Vec::with_capacity(self.px.len() * 4);
        for p in &self.px {
            let a = p[3];
            for c in &p[..3] {
                let straight = if a > 0.0 { c / a } else { 0.0 };
                rgba.push((straight * 255.0).round().clamp(0.0, 255.0) as u8);
            }
            rgba.push((a * 255.0).round().clamp(0.0, 255.0) as u8);
        }
        BadgeImage {
            width: self.size,
            height: self.size,
            rgba,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConnectorState::*;

    const ALL: [ConnectorState; 9] = [
        Ready,
        NeedsAuthorization,
        TokenExpired,
        NeedsReauth,
        MissingConfiguration,
        Unavailable,
        SecretStoreUnreachable,
        NoCredentialRequired,
        ProbeFailed,
    ];

    fn rgb(p: [u8; 4]) -> [u8; 3] {
        [p[0], p[1], p[2]]
    }

    /// A tile pixel away from the glyph and the badge (bottom-left).
    fn tile_pixel(img: &BadgeImage) -> [u8; 4] {
        img.pixel(img.width * 18 / 100, img.height * 80 / 100)
    }

    /// A pixel inside the count disc but clear of the digits.
    fn disc_edge_pixel(img: &BadgeImage) -> [u8; 4] {
        let s = img.width as f32;
        img.pixel((0.74 * s + 0.20 * s) as u32, (0.26 * s) as u32)
    }

    #[test]
    fn dimensions() {
        for size in [16, 22, 32, 64, 128] {
            let img = render(Some(Ready), 3, size);
            assert_eq!((img.width, img.height), (size, size));
            assert_eq!(img.rgba.len(), (size * size * 4) as usize);
        }
    }

    #[test]
    fn corners_are_transparent_and_tile_is_opaque() {
        let img = render(Some(Ready), 0, 64);
        assert_eq!(img.pixel(0, 0)[3], 0);
        assert_eq!(img.pixel(63, 63)[3], 0);
        assert_eq!(tile_pixel(&img), [GREEN[0], GREEN[1], GREEN[2], 255]);
        // The glyph is white, in the middle.
        assert_eq!(img.pixel(32, 48), [255, 255, 255, 255]);
    }

    #[test]
    fn tint_follows_the_worst_state() {
        for state in ALL {
            assert_eq!(
                rgb(tile_pixel(&render(Some(state), 0, 64))),
                tint(Some(state))
            );
        }
        assert_eq!(rgb(tile_pixel(&render(None, 0, 64))), GREY);
        let classes = [
            Some(Ready),
            None,
            Some(TokenExpired),
            Some(NeedsAuthorization),
            Some(ProbeFailed),
        ];
        for (i, a) in classes.iter().enumerate() {
            for b in &classes[i + 1..] {
                assert_ne!(
                    tile_pixel(&render(*a, 0, 64)),
                    tile_pixel(&render(*b, 0, 64)),
                    "{a:?} vs {b:?}"
                );
            }
        }
        assert_eq!(tint(Some(NoCredentialRequired)), tint(Some(Ready)));
        assert_eq!(tint(Some(SecretStoreUnreachable)), tint(Some(ProbeFailed)));
        for s in [NeedsReauth, MissingConfiguration, Unavailable] {
            assert_eq!(tint(Some(s)), tint(Some(NeedsAuthorization)));
        }
    }

    #[test]
    fn a_count_draws_only_in_the_top_right_corner() {
        let plain = render(Some(NeedsAuthorization), 0, 64);
        let counted = render(Some(NeedsAuthorization), 3, 64);
        let mut changed_in_corner = 0;
        for y in 0..64 {
            for x in 0..64 {
                let same = plain.pixel(x, y) == counted.pixel(x, y);
                if x >= 28 && y < 36 {
                    changed_in_corner += usize::from(!same);
                } else {
                    assert!(same, "pixel ({x}, {y}) changed outside the badge corner");
                }
            }
        }
        assert!(changed_in_corner > 100, "{changed_in_corner}");
        assert_eq!(rgb(disc_edge_pixel(&counted)), BADGE);
        // Different numbers draw different digits.
        assert_ne!(counted.rgba, render(Some(NeedsAuthorization), 4, 64).rgba);
    }

    #[test]
    fn zero_draws_no_badge() {
        assert_eq!(badge_text(0), None);
        for state in ALL {
            let img = render(Some(state), 0, 64);
            assert_ne!(rgb(disc_edge_pixel(&img)), BADGE);
            assert_eq!(img.rgba, render_tinted(tint(Some(state)), 0, 64).rgba);
        }
        assert_ne!(rgb(disc_edge_pixel(&render(None, 0, 64))), BADGE);
    }

    #[test]
    fn above_nine_reads_nine_plus() {
        assert_eq!(badge_text(1).as_deref(), Some("1"));
        assert_eq!(badge_text(9).as_deref(), Some("9"));
        assert_eq!(badge_text(12).as_deref(), Some("9+"));
        assert_eq!(badge_text(10_000).as_deref(), Some("9+"));
        let twelve = render(Some(ProbeFailed), 12, 64);
        assert_eq!(twelve.rgba, render(Some(ProbeFailed), 100, 64).rgba);
        assert_ne!(twelve.rgba, render(Some(ProbeFailed), 9, 64).rgba);
    }

    #[test]
    fn digits_are_crisp_at_tray_size() {
        // Every digit pixel is either fully white or not white at all: no half-covered cells.
        let img = render(Some(Ready), 8, 64);
        let whites = (0..64u32)
            .flat_map(|y| (32..64u32).map(move |x| (x, y)))
            .filter(|&(x, y)| y < 34 && img.pixel(x, y) == [255, 255, 255, 255])
            .count();
        // "8" has 13 lit cells of 3x3 pixels each, plus the white glyph pixels left outside the disc.
        assert!(whites >= 13 * 9, "{whites}");
    }

    /// Writes the app icon sources (raw RGBA) for scripts/make-icons.sh:
    /// `PATCHBAY_ICON_OUT=dir cargo test -p patchbay-core --lib badge -- --ignored`.
    #[test]
    #[ignore]
    fn write_app_icon_sources() {
        let Some(dir) = std::env::var_os("PATCHBAY_ICON_OUT") else {
            return;
        };
        let dir = std::path::PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        for size in [16u32, 24, 32, 48, 64, 128, 256, 512, 1024] {
            let img = render_tinted(BRAND, 0, size);
            std::fs::write(dir.join(format!("icon-{size}.rgba")), &img.rgba).unwrap();
        }
        let tray = render(Some(NeedsAuthorization), 2, 64);
        std::fs::write(dir.join("tray-sample-64.rgba"), &tray.rgba).unwrap();
    }
}
