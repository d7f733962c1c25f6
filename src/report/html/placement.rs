//! Where a point's label goes on a chart: beside its marker, on the first side where it covers
//! no label or marker placed before it (text widths estimated from the character count).

use super::svg::{HPos, Pos, VPos};

/// A box on the chart, px: left, top, right, bottom.
pub(super) type Rect = (i32, i32, i32, i32);

/// A label's place: its anchor point and which way the text runs from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spot {
    /// The anchor, px.
    pub at: (i32, i32),
    /// The text ends at the anchor (left of the marker) rather than starting there.
    pub leftward: bool,
    /// The text sits above the anchor rather than below it.
    pub above: bool,
}

impl Spot {
    /// The text anchoring that puts the label there.
    pub(super) fn pos(self) -> Pos {
        let h = if self.leftward { HPos::Right } else { HPos::Left };
        Pos::new(h, if self.above { VPos::Bottom } else { VPos::Top })
    }
}

/// Boxes already taken on one chart.
#[derive(Debug, Default)]
pub(super) struct Placer {
    taken: Vec<Rect>,
}

/// Estimated width of `chars` characters at `size` px, px (proportional sans-serif).
pub(super) fn text_width(chars: usize, size: u32) -> i32 {
    (chars as f64 * f64::from(size) * 0.6).ceil() as i32
}

fn overlaps(a: Rect, b: Rect) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

impl Placer {
    /// Marks `r` as taken (a marker).
    pub(super) fn block(&mut self, r: Rect) {
        self.taken.push(r);
    }

    /// A free spot for a `w` x `h` label beside the marker at `(x, y)`: above right, below
    /// right, above left, below left (`prefer_left`: the left ones first), each `gap` px off
    /// the marker; the spot is then taken. `None` when every side is covered.
    pub(super) fn place(
        &mut self,
        (x, y): (i32, i32),
        (w, h): (i32, i32),
        gap: i32,
        prefer_left: bool,
    ) -> Option<Spot> {
        let sides = [(false, true), (false, false), (true, true), (true, false)];
        let order = if prefer_left { [2, 3, 0, 1] } else { [0, 1, 2, 3] };
        for (leftward, above) in order.map(|k| sides[k]) {
            let ax = if leftward { x - gap } else { x + gap };
            let ay = if above { y - gap + 2 } else { y + gap - 2 };
            let (x0, y0) = (if leftward { ax - w } else { ax }, if above { ay - h } else { ay });
            let rect = (x0, y0, x0 + w, y0 + h);
            if !self.taken.iter().any(|t| overlaps(*t, rect)) {
                self.taken.push(rect);
                return Some(Spot { at: (ax, ay), leftward, above });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_takes_the_first_free_side() {
        let mut p = Placer::default();
        let first = p.place((100, 100), (40, 12), 8, false).expect("free");
        assert_eq!(first, Spot { at: (108, 94), leftward: false, above: true });
        let second = p.place((100, 100), (40, 12), 8, false).expect("below is free");
        assert_eq!(second, Spot { at: (108, 106), leftward: false, above: false });
        let third = p.place((100, 100), (40, 12), 8, false).expect("left is free");
        assert_eq!((third.leftward, third.above), (true, true));
        assert!(p.place((100, 100), (40, 12), 8, false).is_some());
        assert_eq!(p.place((100, 100), (40, 12), 8, false), None, "all four sides taken");
    }

    #[test]
    fn markers_block_and_left_can_come_first() {
        let mut p = Placer::default();
        p.block((105, 80, 160, 99));
        let spot = p.place((100, 100), (40, 12), 8, false).expect("below right");
        assert_eq!((spot.leftward, spot.above), (false, false));
        let left = Placer::default().place((100, 100), (40, 12), 8, true).expect("free");
        assert_eq!((left.at, left.leftward), ((92, 94), true));
        assert!(text_width(10, 12) > text_width(5, 12) && text_width(0, 12) == 0);
    }
}
