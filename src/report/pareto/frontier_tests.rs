//! The frontier: examples (ties, duplicates, NaN and infinities) and properties checked against
//! the definition by brute force.

use super::*;
use proptest::prelude::*;

#[test]
fn the_frontier_of_a_saturating_curve_is_every_point_past_the_knee() {
    // Concurrency 1..16: aggregate grows while per-user falls; conc 16 gains nothing over 8.
    let points = [(80.0, 80.0), (150.0, 75.0), (280.0, 70.0), (400.0, 50.0), (390.0, 24.0)];
    let f = frontier(&points);
    assert_eq!(f.corners, [0, 1, 2, 3]);
    assert_eq!(f.on, [true, true, true, true, false]);
    assert!(dominates(points[3], points[4]) && !dominates(points[2], points[3]));
}

#[test]
fn ties_keep_the_better_one_and_duplicates_stay_together() {
    // Same x: the higher y wins; same y: the higher x wins; the same place twice: both on it.
    let points = [(10.0, 5.0), (10.0, 7.0), (4.0, 7.0), (10.0, 7.0), (12.0, 1.0)];
    let f = frontier(&points);
    assert_eq!(f.corners, [1, 4], "the first of the two (10, 7) is the corner");
    assert_eq!(f.on, [false, true, false, true, true]);
    assert!(!dominates(points[1], points[3]) && !dominates(points[3], points[1]));
}

#[test]
fn nan_and_infinities_are_dropped() {
    let points = [(f64::NAN, 5.0), (3.0, f64::INFINITY), (f64::NEG_INFINITY, 1.0), (2.0, 2.0), (1.0, f64::NAN)];
    let f = frontier(&points);
    assert_eq!(f.corners, [3]);
    assert_eq!(f.on, [false, false, false, true, false]);
    assert!(!dominates((3.0, f64::INFINITY), (2.0, 2.0)) && !dominates((2.0, 2.0), (f64::NAN, 1.0)));
    assert_eq!(frontier(&[]), Frontier::default());
}

#[test]
fn the_staircase_steps_down_then_across() {
    assert_eq!(
        staircase(&[(1.0, 9.0), (4.0, 6.0), (8.0, 2.0)]),
        [(1.0, 9.0), (1.0, 6.0), (4.0, 6.0), (4.0, 2.0), (8.0, 2.0)]
    );
    assert_eq!(staircase(&[(3.0, 3.0)]), [(3.0, 3.0)]);
    assert!(staircase(&[]).is_empty());
}

/// A coordinate: mostly a few small integers (ties and duplicates), sometimes any value,
/// sometimes NaN or an infinity.
fn coord() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => (0u8..6).prop_map(f64::from),
        3 => 0.0..100.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
    ]
}

fn finite(p: Xy) -> bool {
    p.0.is_finite() && p.1.is_finite()
}

proptest! {
    #[test]
    fn frontier_points_are_exactly_the_non_dominated_ones(points in prop::collection::vec((coord(), coord()), 0..40)) {
        let f = frontier(&points);
        prop_assert_eq!(f.on.len(), points.len());
        for (i, &p) in points.iter().enumerate() {
            let beaten = points.iter().any(|&q| dominates(q, p));
            prop_assert_eq!(f.on[i], finite(p) && !beaten, "point {} {:?}", i, p);
            if finite(p) && !f.on[i] {
                prop_assert!(f.corners.iter().any(|&c| dominates(points[c], p)), "no corner dominates {:?}", p);
            }
            if f.on[i] {
                prop_assert!(f.corners.iter().any(|&c| points[c] == p), "{:?} is on but at no corner", p);
            }
        }
    }

    #[test]
    fn corners_are_sorted_monotone_and_first_of_their_place(points in prop::collection::vec((coord(), coord()), 0..40)) {
        let f = frontier(&points);
        for w in f.corners.windows(2) {
            let (a, b) = (points[w[0]], points[w[1]]);
            prop_assert!(a.0 < b.0 && a.1 > b.1, "{:?} then {:?}", a, b);
        }
        for &c in &f.corners {
            prop_assert!(f.on[c]);
            prop_assert!(points[..c].iter().all(|&q| q != points[c]), "corner {} is not the first at its place", c);
        }
        let finite_count = points.iter().filter(|&&p| finite(p)).count();
        prop_assert_eq!(f.corners.is_empty(), finite_count == 0);
    }

    #[test]
    fn the_order_given_does_not_change_the_frontier(points in prop::collection::vec((coord(), coord()), 0..30)) {
        let at = |pts: &[Xy], f: &Frontier| -> Vec<(u64, u64)> {
            f.corners.iter().map(|&c| (pts[c].0.to_bits(), pts[c].1.to_bits())).collect()
        };
        let reversed: Vec<Xy> = points.iter().rev().copied().collect();
        let (a, b) = (frontier(&points), frontier(&reversed));
        prop_assert_eq!(at(&points, &a), at(&reversed, &b));
        let on_reversed: Vec<bool> = b.on.iter().rev().copied().collect();
        prop_assert_eq!(a.on, on_reversed);
    }

    #[test]
    fn the_staircase_is_monotone_through_every_corner(points in prop::collection::vec((coord(), coord()), 0..30)) {
        let f = frontier(&points);
        let corners: Vec<Xy> = f.corners.iter().map(|&c| points[c]).collect();
        let path = staircase(&corners);
        prop_assert_eq!(path.len(), (2 * corners.len()).saturating_sub(1));
        for w in path.windows(2) {
            prop_assert!(w[0].0 <= w[1].0 && w[0].1 >= w[1].1, "{:?}", w);
            prop_assert!(w[0].0 == w[1].0 || w[0].1 == w[1].1, "a step is vertical or horizontal: {:?}", w);
        }
        prop_assert!(corners.iter().all(|c| path.contains(c)));
    }
}
