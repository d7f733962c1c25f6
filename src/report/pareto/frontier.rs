//! The Pareto frontier of points where higher is better on both axes: which points no other
//! point beats, the frontier's corners in order, and the staircase that joins them.

/// Where a point stands: `(x, y)`, both higher-better (aggregate tok/s, tok/s per user).
pub type Xy = (f64, f64);

/// `a` dominates `b`: at least as good on both axes and better on one. A point with a
/// coordinate that is NaN or infinite neither dominates nor is dominated.
pub fn dominates(a: Xy, b: Xy) -> bool {
    let finite = |p: Xy| p.0.is_finite() && p.1.is_finite();
    finite(a) && finite(b) && a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// The frontier of a list of points.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontier {
    /// The frontier's corners, as indices into the points, by x ascending (y then strictly
    /// descending): one per distinct place, the first point given there.
    pub corners: Vec<usize>,
    /// For every point: finite and dominated by no other point (a duplicate of a corner is on
    /// the frontier too).
    pub on: Vec<bool>,
}

/// The frontier of `points`: points with a NaN or infinite coordinate are dropped (never on
/// it); of equal points, every one is on it and the first is its corner. O(n log n).
pub fn frontier(points: &[Xy]) -> Frontier {
    let mut order: Vec<usize> =
        (0..points.len()).filter(|&i| points[i].0.is_finite() && points[i].1.is_finite()).collect();
    // Best x first, then best y, then the first given: a point is dominated exactly when one
    // before it in this order has a higher y, or the same y at a higher x.
    order.sort_by(|&a, &b| {
        points[b].0.total_cmp(&points[a].0).then(points[b].1.total_cmp(&points[a].1)).then(a.cmp(&b))
    });
    let mut on = vec![false; points.len()];
    let mut corners: Vec<usize> = Vec::new();
    for i in order {
        let p = points[i];
        match corners.last().map(|&c| points[c]) {
            Some(c) if p.1 < c.1 || (p.1 == c.1 && p.0 < c.0) => {}
            Some(c) if p.0 == c.0 && p.1 == c.1 => on[i] = true,
            _ => {
                on[i] = true;
                corners.push(i);
            }
        }
    }
    corners.reverse();
    Frontier { corners, on }
}

/// The staircase through `corners` (x ascending, y descending): from each corner straight
/// down to the next one's y, then across to it; the boundary of what the frontier's points
/// reach (for any x up to a corner's, the best y available is that corner's or better).
pub fn staircase(corners: &[Xy]) -> Vec<Xy> {
    let mut path = Vec::with_capacity(corners.len() * 2);
    for (i, &c) in corners.iter().enumerate() {
        if i > 0 {
            path.push((corners[i - 1].0, c.1));
        }
        path.push(c);
    }
    path
}

#[cfg(test)]
#[path = "frontier_tests.rs"]
mod tests;
