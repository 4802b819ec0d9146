//! The cold-start curve of `nftables-shapes` as an SVG: services on x,
//! seconds on y, per shape a solid line (the kernel's time) and a dashed
//! one (build + encode + kernel). Plain text, no plotting dependency.

use crate::nftables_shapes::{ColdStart, Shape};
use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 50.0;
const TICKS: u32 = 5;

/// The SVG document for `points`. The y axis fits the shapes other than
/// upstream v1.36's (quadratic); its points above the axis are drawn
/// clipped, their value written at the top edge.
pub fn render(title: &str, points: &[ColdStart]) -> String {
    let max_x = points
        .iter()
        .map(|p| f64::from(p.services))
        .fold(1.0, f64::max);
    let fitted = points.iter().filter(|p| p.shape != Shape::Anonymous);
    let max_y = fitted.map(|p| p.wall.as_secs_f64()).fold(0.1, f64::max) * 1.05;
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
    let shapes = [
        Shape::Anonymous,
        Shape::Direct,
        Shape::Shared,
        Shape::Interval,
    ];
    for (index, shape) in shapes.iter().enumerate() {
        let mut line: Vec<&ColdStart> = points.iter().filter(|p| p.shape == *shape).collect();
        if line.is_empty() {
            continue;
        }
        line.sort_by_key(|p| p.services);
        let colour = ["#c0392b", "#2471a3", "#1e8449", "#8e44ad"][index];
        let kernel: Vec<(f64, f64)> = line
            .iter()
            .map(|p| (f64::from(p.services), p.kernel.as_secs_f64()))
            .collect();
        let wall: Vec<(f64, f64)> = line
            .iter()
            .map(|p| (f64::from(p.services), p.wall.as_secs_f64()))
            .collect();
        plot.polyline(&mut svg, &kernel, colour, "");
        plot.polyline(&mut svg, &wall, colour, " stroke-dasharray=\"5,4\"");
        legend(&mut svg, index, shape.name(), colour);
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

fn legend(svg: &mut String, index: usize, name: &str, colour: &str) {
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
        "<text x=\"{}\" y=\"{}\" font-size=\"10\">solid kernel, dashed ours+kernel</text>",
        x + 30.0,
        y + 17.0
    );
}
