//! A cold-start curve as an SVG: services on x, seconds on y, per series
//! a solid line (the kernel's time) and a dashed one (ours + the kernel's:
//! the whole cold start). Drawn by `nftables-shapes --svg` (one series per
//! table shape) and `nftables-curve --svg` (the proxy's own cold starts,
//! ours and upstream v1.36's table). Plain text, no plotting dependency.

use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 50.0;
const TICKS: u32 = 5;
const COLOURS: [&str; 6] = ["#c0392b", "#2471a3", "#1e8449", "#8e44ad", "#d68910", "#566573"];

/// One measured cold start.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Services.
    pub services: f64,
    /// The kernel's time, in seconds.
    pub kernel: f64,
    /// The whole cold start, in seconds.
    pub wall: f64,
}

/// One line pair of the curve.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its legend.
    pub name: String,
    /// Its points, any order.
    pub points: Vec<Point>,
    /// Whether the y axis is fitted to it; a series that is not (a
    /// quadratic one) is drawn clipped, its values above the axis written
    /// at the top edge.
    pub fitted: bool,
}

/// The SVG document for `series` (`legend_note`: the line under each
/// legend entry; `footnotes`: lines under the legend, e.g. runs that did
/// not finish).
pub fn render(title: &str, series: &[Series], legend_note: &str, footnotes: &[String]) -> String {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let max_x = all().map(|p| p.services).fold(1.0, f64::max);
    let fitted = series.iter().filter(|s| s.fitted).flat_map(|s| s.points.iter());
    let max_y = fitted.map(|p| p.wall.max(p.kernel)).fold(0.1, f64::max) * 1.05;
    let plot = Plot { max_x, max_y };
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{LEFT}\" y=\"22\" font-size=\"14\">{title}</text>\n"
    );
    plot.axes(&mut svg);
    let _ = writeln!(
        svg,
        "<clipPath id=\"plot\"><rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{}\" height=\"{}\"/></clipPath>",
        WIDTH - LEFT - RIGHT,
        HEIGHT - TOP - BOTTOM
    );
    for (index, one) in series.iter().enumerate() {
        if one.points.is_empty() {
            continue;
        }
        let mut line = one.points.clone();
        line.sort_by(|a, b| a.services.total_cmp(&b.services));
        let colour = COLOURS[index % COLOURS.len()];
        let kernel: Vec<(f64, f64)> = line.iter().map(|p| (p.services, p.kernel)).collect();
        let wall: Vec<(f64, f64)> = line.iter().map(|p| (p.services, p.wall)).collect();
        plot.polyline(&mut svg, &kernel, colour, "");
        plot.polyline(&mut svg, &wall, colour, " stroke-dasharray=\"5,4\"");
        legend(&mut svg, index, &one.name, legend_note, colour);
    }
    for (line, text) in footnotes.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"10\">{text}</text>",
            WIDTH - RIGHT + 15.0,
            TOP + 20.0 + 36.0 * series.len() as f64 + 14.0 * line as f64
        );
    }
    svg.push_str("</svg>\n");
    svg
}

struct Plot {
    max_x: f64,
    max_y: f64,
}

impl Plot {
    fn x(&self, services: f64) -> f64 {
        LEFT + services / self.max_x * (WIDTH - LEFT - RIGHT)
    }

    fn y(&self, seconds: f64) -> f64 {
        HEIGHT - BOTTOM - seconds / self.max_y * (HEIGHT - TOP - BOTTOM)
    }

    fn axes(&self, svg: &mut String) {
        let (x0, y0) = (self.x(0.0), self.y(0.0));
        let (x1, y1) = (self.x(self.max_x), self.y(self.max_y));
        let _ = writeln!(
            svg,
            "<path d=\"M{x0},{y1} L{x0},{y0} L{x1},{y0}\" stroke=\"black\" fill=\"none\"/>"
        );
        for tick in 0..=TICKS {
            let fraction = f64::from(tick) / f64::from(TICKS);
            let (sx, sy) = (fraction * self.max_x, fraction * self.max_y);
            let (px, py) = (self.x(sx), self.y(sy));
            let _ = writeln!(
                svg,
                "<text x=\"{px:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{sx:.0}</text>",
                y0 + 18.0
            );
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{sy:.1}</text>",
                x0 - 6.0,
                py + 4.0
            );
            let _ = writeln!(
                svg,
                "<path d=\"M{x0},{py:.1} L{x1},{py:.1}\" stroke=\"#ddd\"/>"
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">services</text>",
            (x0 + x1) / 2.0,
            HEIGHT - 12.0
        );
        let _ = writeln!(
            svg,
            "<text x=\"16\" y=\"{:.1}\" transform=\"rotate(-90 16 {:.1})\" text-anchor=\"middle\">cold start, seconds</text>",
            (y0 + y1) / 2.0,
            (y0 + y1) / 2.0
        );
    }

    fn polyline(&self, svg: &mut String, points: &[(f64, f64)], colour: &str, extra: &str) {
        let coords: Vec<String> = points
            .iter()
            .map(|&(sx, sy)| format!("{:.1},{:.1}", self.x(sx), self.y(sy)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline clip-path=\"url(#plot)\" points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"{extra}/>",
            coords.join(" ")
        );
        for &(sx, sy) in points {
            if sy > self.max_y {
                if extra.is_empty() {
                    let _ = writeln!(
                        svg,
                        "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\" text-anchor=\"middle\">↑ {sy:.1} s</text>",
                        self.x(sx),
                        TOP - 4.0
                    );
                }
                continue;
            }
            let _ = writeln!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"/>",
                self.x(sx),
                self.y(sy)
            );
        }
    }
}

fn legend(svg: &mut String, index: usize, name: &str, note: &str, colour: &str) {
    let x = WIDTH - RIGHT + 15.0;
    let y = TOP + 20.0 + 36.0 * index as f64;
    let _ = writeln!(
        svg,
        "<path d=\"M{x},{y} L{},{y}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
        x + 24.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\">{name}</text>",
        x + 30.0,
        y + 4.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" font-size=\"10\">{note}</text>",
        x + 30.0,
        y + 17.0
    );
}
