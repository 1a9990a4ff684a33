//! Plots of a run, as SVG or PNG (`--plot FILE`, by its extension): the
//! achieved rate per time bucket against the target, and the wait over time.
//!
//! Any subcommand can draw one: aggregate its ops into [`Buckets`] (cheap
//! enough for a worker's hot path: a comparison and three additions per op),
//! turn them into [`Series`] with [`rate_points`] and [`wait_points`], put
//! them in a [`Plot`] of two panels and [`write`] it.
//!
//! Text is laid out with DejaVu Sans, compiled in, so PNGs have labels on any
//! machine; SVGs name the generic `sans-serif` family and leave the font to
//! the viewer.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::Context;

use crate::report::fmt_duration;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Plot width in pixels (SVG user units).
pub const WIDTH: u32 = 1000;
/// Plot height in pixels (SVG user units).
pub const HEIGHT: u32 = 760;

/// The most buckets a [`Buckets`] keeps; later times go in the last one.
const MAX_BUCKETS: usize = 1 << 17;

/// The most buckets `--bucket` may cut a plot's time axis into.
pub const MAX_PLOT_BUCKETS: u64 = 10_000;

/// Checks that buckets `width_ns` wide cut `span_ns` into at most
/// [`MAX_PLOT_BUCKETS`]; the message names `--bucket`.
pub fn check_bucket(span_ns: u64, width_ns: u64) -> Result<(), String> {
    let count = span_ns.div_ceil(width_ns.max(1));
    if count > MAX_PLOT_BUCKETS {
        return Err(format!(
            "--bucket {} cuts the plot's {} into {count} buckets; at most {MAX_PLOT_BUCKETS} \
             can be drawn: use a wider bucket, or leave --bucket out for about 100",
            fmt_duration(width_ns),
            fmt_duration(span_ns)
        ));
    }
    Ok(())
}

/// Series colours, in order: a colour-blind-friendly qualitative palette
/// (Tableau 10, without its grey, which [`ARRIVALS`] uses).
pub const PALETTE: [RGBColor; 9] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
];

/// The colour of an offered-load series (arrivals).
pub const ARRIVALS: RGBColor = RGBColor(0xa0, 0xa0, 0xa0);

/// The colour of a target line.
pub const TARGET: RGBColor = RGBColor(0x30, 0x30, 0x30);

/// The file format of a plot, from its file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.svg`
    Svg,
    /// `.png`
    Png,
}

/// Where to write a plot (`--plot FILE`) and in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotPath {
    path: PathBuf,
    format: Format,
}

impl PlotPath {
    /// The file, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates (or truncates) the file now, so that a path that cannot be
    /// written is reported before a run rather than after it.
    ///
    /// # Errors
    ///
    /// The I/O error, with the path.
    pub fn check_writable(&self) -> anyhow::Result<()> {
        std::fs::File::create(&self.path)
            .map(drop)
            .with_context(|| format!("cannot create the plot file {}", self.path.display()))
    }
}

/// `--plot FILE`: a file name ending in `.svg` or `.png` (any case).
pub fn parse_plot_path(s: &str) -> Result<PlotPath, String> {
    let path = PathBuf::from(s);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let format = match ext.as_deref() {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => {
            return Err(
                "expected a file name ending in .svg or .png (the extension chooses \
                        the format), e.g. rate.svg"
                    .to_owned(),
            )
        }
    };
    Ok(PlotPath { path, format })
}

/// What one time bucket saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Ops in the bucket.
    pub ops: u64,
    /// The longest wait of those ops, in nanoseconds.
    pub wait_max: u64,
    /// Their waits added up, in nanoseconds.
    pub wait_sum: u128,
}

/// Ops aggregated into time buckets of a fixed width, from time 0.
///
/// Recording is a comparison and three additions while times stay in the
/// current bucket (as one thread's clock readings do), and a division when
/// they leave it.
#[derive(Debug, Clone)]
pub struct Buckets {
    width: u64,
    buckets: Vec<Bucket>,
    /// The bucket the last time fell in, and its bounds.
    current: usize,
    start: u64,
    end: u64,
}

impl Buckets {
    /// Empty buckets `width_ns` wide (at least 1 ns).
    pub fn new(width_ns: u64) -> Buckets {
        Buckets {
            width: width_ns.max(1),
            buckets: Vec::new(),
            current: 0,
            start: 0,
            end: 0,
        }
    }

    /// The bucket width in nanoseconds.
    pub fn width(&self) -> u64 {
        self.width
    }

    /// The buckets, from time 0 to the last one with an op.
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// Records one op at `t` nanoseconds that waited `wait` nanoseconds.
    #[inline]
    pub fn record(&mut self, t: u64, wait: u64) {
        if t < self.start || t >= self.end {
            self.locate(t);
        }
        let b = &mut self.buckets[self.current];
        b.ops += 1;
        b.wait_max = b.wait_max.max(wait);
        b.wait_sum += u128::from(wait);
    }

    #[cold]
    fn locate(&mut self, t: u64) {
        let index = usize::try_from(t / self.width)
            .unwrap_or(usize::MAX)
            .min(MAX_BUCKETS - 1);
        if self.buckets.len() <= index {
            self.buckets.resize(index + 1, Bucket::default());
        }
        self.current = index;
        self.start = index as u64 * self.width;
        self.end = if index == MAX_BUCKETS - 1 {
            u64::MAX
        } else {
            self.start + self.width
        };
    }

    /// Adds another recorder's buckets (of the same width) to these.
    pub fn merge(&mut self, other: &Buckets) {
        debug_assert_eq!(self.width, other.width);
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), Bucket::default());
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            a.ops += b.ops;
            a.wait_max = a.wait_max.max(b.wait_max);
            a.wait_sum += b.wait_sum;
        }
    }
}

/// With `--plot`: fails before the run if the file `to` cannot be written,
/// and picks the width of the time buckets the run's ops are counted in:
/// `bucket` if given, else one sized for the run's length (exact with a
/// `duration`, expected with a `count` at `target_rate`). `None` without
/// `--plot`. Shared by `pace` and `exec`.
pub fn run_buckets(
    to: Option<&PlotPath>,
    bucket: Option<std::time::Duration>,
    duration: Option<std::time::Duration>,
    count: Option<u64>,
    target_rate: f64,
) -> anyhow::Result<Option<u64>> {
    let Some(to) = to else {
        return Ok(None);
    };
    let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let span = match (duration, count) {
        (Some(d), _) => nanos(d),
        (None, Some(n)) => (n as f64 * 1e9 / target_rate) as u64,
        (None, None) => 0,
    };
    let width = match bucket {
        Some(b) => nanos(b),
        None => auto_bucket(span, target_rate),
    };
    check_bucket(span, width).map_err(crate::error::UsageError)?;
    to.check_writable()?;
    Ok(Some(width))
}

/// A bucket width for a run `span_ns` long at about `rate` ops per second:
/// about 100 buckets, but at least 5 ops' worth each (so a steady run reads
/// as a steady rate), rounded up to 1, 2 or 5 times a power of ten
/// nanoseconds, at least 1 µs.
pub fn auto_bucket(span_ns: u64, rate: f64) -> u64 {
    let by_span = span_ns as f64 / 100.0;
    let by_rate = if rate > 0.0 { 5e9 / rate } else { 0.0 };
    let want = by_span.max(by_rate).max(1_000.0);
    let mut decade = 1u64;
    loop {
        for m in [1, 2, 5] {
            let w = decade.saturating_mul(m);
            if w as f64 >= want || w == u64::MAX {
                return w;
            }
        }
        decade = decade.saturating_mul(10);
    }
}

/// The achieved rate per bucket, in ops per second, as a staircase of
/// `(seconds, ops/s)` points over `[0, span_ns)`: each bucket's ops over its
/// width (the last bucket's width is what of it lies before `span_ns`).
pub fn rate_points(buckets: &Buckets, span_ns: u64) -> Vec<(f64, f64)> {
    let w = buckets.width();
    let count = span_ns.div_ceil(w).max(buckets.buckets().len() as u64);
    let mut points = Vec::with_capacity(2 * count as usize);
    for i in 0..count {
        let start = i * w;
        let end = (start + w).min(span_ns.max(start + 1));
        let ops = buckets.buckets().get(i as usize).map_or(0, |b| b.ops);
        let rate = ops as f64 * 1e9 / (end - start) as f64;
        points.push((start as f64 / 1e9, rate));
        points.push((end as f64 / 1e9, rate));
    }
    points
}

/// Which wait figure of a bucket to plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStat {
    /// The longest wait in the bucket.
    Max,
    /// The mean wait in the bucket.
    Mean,
}

/// A wait figure per bucket, as a staircase of `(seconds, nanoseconds)`
/// points like [`rate_points`]'s, over the buckets with ops only: a bucket
/// without ops breaks the line (a point with a NaN value, which the drawing
/// skips), so no wait is drawn where no op was.
pub fn wait_points(buckets: &Buckets, stat: WaitStat) -> Vec<(f64, f64)> {
    let w = buckets.width() as f64;
    let mut points = Vec::new();
    let mut gap = false;
    for (i, b) in buckets.buckets().iter().enumerate() {
        if b.ops == 0 {
            gap = true;
            continue;
        }
        let start = i as f64 * w / 1e9;
        if gap && !points.is_empty() {
            points.push((start, f64::NAN));
        }
        gap = false;
        let v = match stat {
            WaitStat::Max => b.wait_max as f64,
            WaitStat::Mean => b.wait_sum as f64 / b.ops as f64,
        };
        points.push((start, v));
        points.push((start + w / 1e9, v));
    }
    points
}

/// One line of a panel.
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend text.
    pub name: String,
    /// The line colour.
    pub color: RGBColor,
    /// A dashed line (targets) instead of a solid one.
    pub dashed: bool,
    /// The stroke width in pixels; give lines drawn first a wider stroke, so
    /// that where later lines cover them they still show at the edges.
    pub width: u32,
    /// `(seconds, value)` points, in order of time.
    pub points: Vec<(f64, f64)>,
}

/// What a panel's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Operations per second.
    Rate,
    /// Nanoseconds, shown in the unit that suits the largest value.
    Nanos,
}

/// One chart of a plot.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The chart's caption.
    pub title: String,
    /// The name of the values (the y axis reads "NAME (UNIT)").
    pub quantity: String,
    /// What the values are.
    pub unit: Unit,
    /// The lines, drawn in order.
    pub series: Vec<Series>,
}

/// A plot: a title and two panels, one above the other, sharing the time
/// axis from 0 to `end_secs`.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The plot's title.
    pub title: String,
    /// Where the time axis ends, in seconds.
    pub end_secs: f64,
    /// The upper panel: rates.
    pub rate: Panel,
    /// The lower panel: waits.
    pub wait: Panel,
}

/// A horizontal dashed line at `value` across `[0, end_secs]`.
pub fn target_series(name: String, color: RGBColor, value: f64, end_secs: f64) -> Series {
    Series {
        name,
        color,
        dashed: true,
        width: 1,
        points: vec![(0.0, value), (end_secs, value)],
    }
}

/// Draws `plot` and writes it to `to`, in its format.
///
/// # Errors
///
/// A drawing error (none is expected) or the I/O error writing the file.
pub fn write(to: &PlotPath, plot: &Plot) -> anyhow::Result<()> {
    let bytes = match to.format {
        Format::Svg => render_svg(plot)?.into_bytes(),
        Format::Png => render_png(plot)?,
    };
    std::fs::write(&to.path, bytes)
        .with_context(|| format!("writing the plot to {}", to.path.display()))
}

/// `plot` as an SVG document.
///
/// # Errors
///
/// A drawing error.
pub fn render_svg(plot: &Plot) -> anyhow::Result<String> {
    register_fonts();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, plot)?;
        root.present().map_err(drawing_error)?;
    }
    Ok(svg)
}

/// `plot` as a PNG image (8-bit RGB).
///
/// # Errors
///
/// A drawing or encoding error.
pub fn render_png(plot: &Plot) -> anyhow::Result<Vec<u8>> {
    register_fonts();
    let mut pixels = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, plot)?;
        root.present().map_err(drawing_error)?;
    }
    let mut png_bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut png_bytes, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().context("encoding the PNG")?;
    writer
        .write_image_data(&pixels)
        .context("encoding the PNG")?;
    writer.finish().context("encoding the PNG")?;
    Ok(png_bytes)
}

/// Makes the bundled DejaVu Sans plotters' `sans-serif`, once.
fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Cannot fail: the bundled font is a valid TrueType file (checked by
        // the tests, which render PNGs with text).
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn drawing_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow::anyhow!("drawing the plot: {e}")
}

/// A time-axis or value label: up to 3 significant digits, no trailing zeros.
fn tick_label(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The unit nanosecond values up to `max` are shown in: its divisor and name.
fn nanos_unit(max: f64) -> (f64, &'static str) {
    if max >= 1e9 {
        (1e9, "s")
    } else if max >= 1e6 {
        (1e6, "ms")
    } else if max >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &Plot) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(drawing_error)?;
    let root = root
        .titled(&plot.title, ("sans-serif", 20))
        .map_err(drawing_error)?;
    let (upper, lower) = root.split_vertically(HEIGHT as i32 / 2 - 15);
    // The legends get their own column, as wide in both panels so that the
    // time axes line up, and never hide a line.
    let longest = [&plot.rate, &plot.wait]
        .iter()
        .flat_map(|p| p.series.iter().map(|s| s.name.chars().count()))
        .max()
        .unwrap_or(0);
    let legend_width = (longest as u32 * 7 + 40).clamp(120, 320);
    draw_panel(&upper, &plot.rate, plot.end_secs, legend_width)?;
    draw_panel(&lower, &plot.wait, plot.end_secs, legend_width)?;
    Ok(())
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    end_secs: f64,
    legend_width: u32,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let max = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let (divisor, unit) = match panel.unit {
        Unit::Rate => (1.0, "ops/s"),
        Unit::Nanos => nanos_unit(max),
    };
    let y_end = if max > 0.0 { max / divisor * 1.08 } else { 1.0 };
    let x_end = if end_secs > 0.0 { end_secs } else { 1.0 };
    let (chart_area, legend_area) = area.split_horizontally(WIDTH - legend_width);
    let mut chart = ChartBuilder::on(&chart_area)
        .caption(&panel.title, ("sans-serif", 16))
        .margin(8)
        .margin_right(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_end, 0f64..y_end)
        .map_err(drawing_error)?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .x_desc("time (s)")
        .y_desc(format!("{} ({unit})", panel.quantity))
        .x_label_formatter(&|v| tick_label(*v))
        .y_label_formatter(&|v| tick_label(*v))
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .draw()
        .map_err(drawing_error)?;
    for s in &panel.series {
        // A point with a NaN value breaks the line.
        for run in s.points.split(|p| !p.1.is_finite()) {
            let points: Vec<(f64, f64)> = run.iter().map(|&(x, y)| (x, y / divisor)).collect();
            let drawn = if s.dashed {
                chart.draw_series(DashedLineSeries::new(points, 6, 4, line_style(s)))
            } else {
                chart.draw_series(LineSeries::new(points, line_style(s)))
            };
            drawn.map_err(drawing_error)?;
        }
    }
    let text =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in panel.series.iter().enumerate() {
        let y = 44 + 20 * i as i32;
        let legend_style = ShapeStyle {
            stroke_width: s.width.clamp(1, 3),
            ..line_style(s)
        };
        let sample: Vec<Vec<(i32, i32)>> = if s.dashed {
            vec![vec![(4, y), (11, y)], vec![(15, y), (22, y)]]
        } else {
            vec![vec![(4, y), (22, y)]]
        };
        for segment in sample {
            legend_area
                .draw(&PathElement::new(segment, legend_style))
                .map_err(drawing_error)?;
        }
        legend_area
            .draw(&Text::new(s.name.clone(), (28, y), text.clone()))
            .map_err(drawing_error)?;
    }
    Ok(())
}

/// How `s` is stroked.
fn line_style(s: &Series) -> ShapeStyle {
    ShapeStyle {
        color: s.color.to_rgba(),
        filled: false,
        stroke_width: s.width.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_paths_need_a_known_extension() {
        assert_eq!(parse_plot_path("a.svg").map(|p| p.format), Ok(Format::Svg));
        assert_eq!(
            parse_plot_path("dir/A.PNG").map(|p| p.format),
            Ok(Format::Png)
        );
        for bad in ["a.jpg", "a", "svg", "a.svg.txt"] {
            let e = parse_plot_path(bad).unwrap_err();
            assert!(e.contains(".svg or .png"), "{bad}: {e}");
        }
    }

    #[test]
    fn buckets_aggregate_and_merge() {
        let mut a = Buckets::new(10);
        a.record(0, 5);
        a.record(9, 7);
        a.record(25, 1);
        a.record(3, 2); // back in time: located again
        let mut b = Buckets::new(10);
        b.record(12, 100);
        b.record(31, 4);
        a.merge(&b);
        let ops: Vec<u64> = a.buckets().iter().map(|x| x.ops).collect();
        assert_eq!(ops, [3, 1, 1, 1]);
        assert_eq!(a.buckets()[0].wait_max, 7);
        assert_eq!(a.buckets()[0].wait_sum, 14);
        assert_eq!(a.buckets()[1].wait_max, 100);
        // Times beyond the last bucket kept go in it.
        let mut c = Buckets::new(1);
        c.record(u64::MAX, 1);
        assert_eq!(c.buckets().len(), MAX_BUCKETS);
    }

    #[test]
    fn too_many_buckets_are_refused() {
        assert_eq!(check_bucket(1_000_000_000, 100_000), Ok(()));
        let e = check_bucket(5_000_000_000, 1_000).unwrap_err();
        assert!(
            e.contains("--bucket 1us cuts the plot's 5s into 5000000 buckets"),
            "{e}"
        );
    }

    #[test]
    fn auto_buckets_are_round_and_hold_several_ops() {
        assert_eq!(auto_bucket(5_000_000_000, 10_000.0), 50_000_000);
        assert_eq!(auto_bucket(9_000_000_000, 25.0), 200_000_000);
        assert_eq!(auto_bucket(9_000_000_000, 10.0), 500_000_000);
        assert_eq!(auto_bucket(100_000, 1e9), 1_000);
        assert_eq!(auto_bucket(0, 0.0), 1_000);
    }

    #[test]
    fn rates_are_ops_over_the_bucket_width() {
        let mut b = Buckets::new(500_000_000);
        for t in [0, 100, 200, 600_000_000] {
            b.record(t, 0);
        }
        // 3 ops in the first 0.5 s, 1 in the last 0.25 s.
        let p = rate_points(&b, 750_000_000);
        assert_eq!(p, [(0.0, 6.0), (0.5, 6.0), (0.5, 4.0), (0.75, 4.0)]);
        let mut b = Buckets::new(500_000_000);
        b.record(0, 3);
        b.record(1, 5);
        b.record(1_200_000_000, 2);
        b.record(1_600_000_000, 4);
        let w = wait_points(&b, WaitStat::Max);
        assert_eq!(w.len(), 7);
        assert_eq!(&w[..2], [(0.0, 5.0), (0.5, 5.0)]);
        assert!(
            w[2].0 == 1.0 && w[2].1.is_nan(),
            "the empty bucket breaks the line"
        );
        assert_eq!(&w[3..], [(1.0, 2.0), (1.5, 2.0), (1.5, 4.0), (2.0, 4.0)]);
        let m = wait_points(&b, WaitStat::Mean);
        assert_eq!(m[0], (0.0, 4.0));
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(10.0), "10");
        assert_eq!(tick_label(1234.0), "1234");
        assert_eq!(tick_label(0.05), "0.05");
    }

    fn sample() -> Plot {
        let mut b = Buckets::new(100_000_000);
        for i in 0..20u64 {
            b.record(i * 50_000_000, i * 1_000_000);
        }
        Plot {
            title: "sample".to_owned(),
            end_secs: 1.0,
            rate: Panel {
                title: "rate".to_owned(),
                quantity: "rate".to_owned(),
                unit: Unit::Rate,
                series: vec![
                    Series {
                        name: "series-a".to_owned(),
                        color: PALETTE[0],
                        dashed: false,
                        width: 2,
                        points: rate_points(&b, 1_000_000_000),
                    },
                    target_series("target".to_owned(), TARGET, 20.0, 1.0),
                ],
            },
            wait: Panel {
                title: "wait".to_owned(),
                quantity: "wait".to_owned(),
                unit: Unit::Nanos,
                series: vec![Series {
                    name: "series-a max".to_owned(),
                    color: PALETTE[0],
                    dashed: false,
                    width: 2,
                    points: wait_points(&b, WaitStat::Max),
                }],
            },
        }
    }

    #[test]
    fn svg_has_the_series_and_labels() {
        let svg = render_svg(&sample()).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("series-a"));
        assert!(svg.contains("series-a max"));
        assert!(svg.contains("wait (ms)"));
        assert!(svg.contains("rate (ops/s)"));
        assert!(svg.contains("#1F77B4"), "palette colour");
    }

    #[test]
    fn png_is_an_image_of_the_plot_size() {
        let png = render_png(&sample()).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let decoder = png::Decoder::new(png.as_slice());
        let reader = decoder.read_info().unwrap();
        assert_eq!((reader.info().width, reader.info().height), (WIDTH, HEIGHT));
    }
}
