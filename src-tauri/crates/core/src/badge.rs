//! The tray icon image: a connector glyph tinted by the worst state, with the number needing
//! attention drawn on it (a count on the icon, for platforms whose trays have no badge).
//!
//! Everything is drawn here, without an image library: a rounded tile in the state's tint, a white
//! plug on it, and, when something needs attention, a white disc in the top-right corner (cut out
//! of the tile by a transparent ring) carrying the count in near-black, in a 3x5 bitmap font ("9+"
//! above nine). One colour says the severity (the tile); the disc only carries the number, so no
//! red bubble sits on an amber tile. The disc takes most of the icon's top-right quarter and the
//! plug shrinks beside it, so the count still reads where panels draw the icon at 16 to 32 pixels
//! (the tests hold it to that, drawn at those sizes and scaled down from the tray's 64).
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
/// The count disc: white, whatever the tile's tint.
pub const BADGE: [u8; 3] = [0xff, 0xff, 0xff];
/// The count's digits on the disc.
pub const DIGITS: [u8; 3] = [0x1c, 0x1e, 0x22];
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
    let text = badge_text(need_attention);

    // The tile.
    c.fill(tint, |u, v| {
        rounded_rect(u, v, 0.06, 0.06, 0.94, 0.94, 0.22)
    });
    // The plug: two prongs, a body with rounded corners, a cable; beside a count it is drawn
    // smaller, in the bottom-left, clear of the disc.
    let (scale, du, dv) = match text {
        Some(_) => (0.5, -0.22, 0.18),
        None => (1.0, 0.0, 0.0),
    };
    c.fill(WHITE, |u, v| {
        let u = (u - 0.5 - du) / scale + 0.5;
        let v = (v - 0.5 - dv) / scale + 0.5;
        rect(u, v, 0.365, 0.19, 0.445, 0.40)
            || rect(u, v, 0.555, 0.19, 0.635, 0.40)
            || rounded_rect(u, v, 0.29, 0.36, 0.71, 0.64, 0.10)
            || rect(u, v, 0.455, 0.62, 0.545, 0.83)
    });

    if let Some(text) = text {
        let (cx, cy, r) = disc_geometry(s);
        let ring = (0.04 * s).max(1.0);
        c.erase(|x, y| disc(x, y, cx, cy, r + ring));
        c.fill_px(BADGE, |x, y| disc(x, y, cx, cy, r));

        // Whole-pixel cells, as large as fit the disc.
        let cols = text.chars().count() * 4 - 1;
        // 0.78 of the diameter: two-pixel cells from 22 pixels up, still inside the disc.
        let by_height = (2.0 * r * 0.78 / 5.0).floor();
        let by_width = (2.0 * r * 0.80 / cols as f32).floor();
        let cell = by_height.min(by_width).max(1.0);
        let x0 = (cx - cell * cols as f32 / 2.0).round();
        let y0 = (cy - cell * 5.0 / 2.0).round();
        c.fill_px(DIGITS, |x, y| {
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

/// The count disc's centre and radius, in pixels, on an icon `s` pixels wide.
fn disc_geometry(s: f32) -> (f32, f32, f32) {
    (0.68 * s, 0.32 * s, 0.30 * s)
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
        let (cx, cy, r) = disc_geometry(img.width as f32);
        img.pixel((cx + 0.8 * r) as u32, cy as u32)
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
    fn a_count_draws_a_white_disc_and_moves_the_plug_aside() {
        let plain = render(Some(NeedsAuthorization), 0, 64);
        let counted = render(Some(NeedsAuthorization), 3, 64);
        assert_eq!(rgb(disc_edge_pixel(&counted)), BADGE);
        assert_eq!(
            tile_pixel(&counted),
            tile_pixel(&plain),
            "the tile keeps its tint"
        );
        // The plug's middle moved: white in the plain icon, tile beside the count.
        assert_eq!(plain.pixel(32, 32), [255, 255, 255, 255]);
        assert_ne!(counted.pixel(32, 40), [255, 255, 255, 255]);
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
        // Every digit pixel is exactly the digit colour: no half-covered cells.
        let img = render(Some(Ready), 8, 64);
        let inked = (0..64u32)
            .flat_map(|y| (0..64u32).map(move |x| (x, y)))
            .filter(|&(x, y)| img.pixel(x, y) == [DIGITS[0], DIGITS[1], DIGITS[2], 255])
            .count();
        // "8" has 13 lit cells of 5x5 pixels each at 64.
        assert_eq!(inked, 13 * 25);
    }

    /// Relative luminance (WCAG 2).
    fn luminance(p: [u8; 4]) -> f32 {
        let lin = |c: u8| {
            let c = c as f32 / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * lin(p[0]) + 0.7152 * lin(p[1]) + 0.0722 * lin(p[2])
    }

    fn contrast(a: f32, b: f32) -> f32 {
        (a.max(b) + 0.05) / (a.min(b) + 0.05)
    }

    /// `img` scaled to `size` by averaging (alpha-weighted) the source pixels whose centres fall
    /// in each target pixel: what a panel does to the 64-pixel icon it is handed.
    fn scaled(img: &BadgeImage, size: u32) -> BadgeImage {
        let f = img.width as f32 / size as f32;
        let mut rgba = Vec::with_capacity((size * size * 4) as usize);
        for ty in 0..size {
            for tx in 0..size {
                let (mut acc, mut alpha, mut n) = ([0f32; 3], 0f32, 0f32);
                for sy in 0..img.height {
                    for sx in 0..img.width {
                        let (cx, cy) = ((sx as f32 + 0.5) / f, (sy as f32 + 0.5) / f);
                        if cx as u32 == tx && cy as u32 == ty {
                            let p = img.pixel(sx, sy);
                            let a = p[3] as f32 / 255.0;
                            for k in 0..3 {
                                acc[k] += p[k] as f32 * a;
                            }
                            alpha += a;
                            n += 1.0;
                        }
                    }
                }
                for c in acc {
                    rgba.push(if alpha > 0.0 {
                        (c / alpha).round() as u8
                    } else {
                        0
                    });
                }
                rgba.push((255.0 * alpha / n.max(1.0)).round() as u8);
            }
        }
        BadgeImage {
            width: size,
            height: size,
            rgba,
        }
    }

    /// The pixels inside the disc that read as ink (against the white disc, WCAG contrast of
    /// 3:1 or more), and the best contrast among them.
    fn ink(img: &BadgeImage) -> (Vec<bool>, f32) {
        let (cx, cy, r) = disc_geometry(img.width as f32);
        let disc_lum = luminance([BADGE[0], BADGE[1], BADGE[2], 255]);
        let mut mask = Vec::new();
        let mut best: f32 = 1.0;
        for y in 0..img.height {
            for x in 0..img.width {
                let inside = disc(x as f32 + 0.5, y as f32 + 0.5, cx, cy, r - 0.5);
                let p = img.pixel(x, y);
                let c = contrast(luminance(p), disc_lum);
                let inked = inside && p[3] == 255 && c >= 3.0;
                if inked {
                    best = best.max(c);
                }
                mask.push(inked);
            }
        }
        (mask, best)
    }

    // The count must read where panels show the icon: drawn at 16, 22, 24 and 32 pixels (macOS
    // and Windows ask for a size) and scaled down from the 64 the Linux tray is handed. Every
    // count from 1 to "9+" leaves ink of WCAG-AA contrast on its disc, and no two counts leave
    // the same ink.
    #[test]
    fn the_count_reads_at_panel_sizes() {
        let counts: Vec<usize> = (1..=10).collect();
        for size in [16u32, 22, 24, 32] {
            for (how, draw) in [
                (
                    "drawn",
                    &(|n| render(Some(NeedsAuthorization), n, size))
                        as &dyn Fn(usize) -> BadgeImage,
                ),
                ("scaled", &|n| {
                    scaled(&render(Some(NeedsAuthorization), n, 64), size)
                }),
            ] {
                let inks: Vec<(Vec<bool>, f32)> = counts.iter().map(|&n| ink(&draw(n))).collect();
                for (i, (mask, best)) in inks.iter().enumerate() {
                    let lit = mask.iter().filter(|&&m| m).count();
                    assert!(
                        lit >= 3,
                        "{how} at {size}px, count {}: {lit} ink pixels",
                        counts[i]
                    );
                    assert!(
                        *best >= 4.5,
                        "{how} at {size}px, count {}: contrast {best:.1}",
                        counts[i]
                    );
                }
                // Some digits of a 3x5 font differ in one cell ("3" and "9"): one pixel where a
                // cell is about one pixel (16 px), two or more from 22 px up.
                let need = if size < 22 { 1 } else { 2 };
                for i in 0..inks.len() {
                    for j in i + 1..inks.len() {
                        let differ = inks[i]
                            .0
                            .iter()
                            .zip(&inks[j].0)
                            .filter(|(a, b)| a != b)
                            .count();
                        assert!(
                            differ >= need,
                            "{how} at {size}px, {} and {} read alike ({differ} pixels apart)",
                            counts[i],
                            counts[j]
                        );
                    }
                }
            }
        }
    }

    // One severity colour per icon: every opaque pixel is the tile's tint, white, the digits'
    // colour, or a blend of two of them (edges), whatever the state and the count.
    #[test]
    fn one_severity_colour_per_icon() {
        fn off_segment(p: [f32; 3], a: [u8; 3], b: [u8; 3]) -> f32 {
            let a = a.map(f32::from);
            let b = b.map(f32::from);
            let ab: Vec<f32> = (0..3).map(|k| b[k] - a[k]).collect();
            let ap: Vec<f32> = (0..3).map(|k| p[k] - a[k]).collect();
            let len2: f32 = ab.iter().map(|d| d * d).sum();
            let t = if len2 > 0.0 {
                (ab.iter().zip(&ap).map(|(x, y)| x * y).sum::<f32>() / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            (0..3)
                .map(|k| (p[k] - a[k] - t * ab[k]).powi(2))
                .sum::<f32>()
                .sqrt()
        }
        for state in ALL {
            let tint = tint(Some(state));
            for n in [1, 3, 12] {
                let img = render(Some(state), n, 64);
                for y in 0..64 {
                    for x in 0..64 {
                        let p = img.pixel(x, y);
                        if p[3] < 255 {
                            continue;
                        }
                        let p = [p[0], p[1], p[2]].map(f32::from);
                        let off = [(tint, WHITE), (tint, DIGITS), (WHITE, DIGITS)]
                            .iter()
                            .map(|(a, b)| off_segment(p, *a, *b))
                            .fold(f32::MAX, f32::min);
                        assert!(off < 4.0, "{state:?} {n}: pixel ({x}, {y}) is {p:?}");
                    }
                }
            }
        }
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
