//! Student's t distribution: its CDF (through the regularized incomplete beta function) and
//! its quantile (the CDF inverted by bisection), for confidence intervals of a mean over a few
//! repeated runs. Pure, no tables: any degrees of freedom, whole or fractional (Welch).

/// Coefficients of the Lanczos approximation of ln Γ (g = 7, n = 9).
const LANCZOS: [f64; 9] = [
    0.999_999_999_999_809_9,
    676.520_368_121_885_1,
    -1_259.139_216_722_402_8,
    771.323_428_777_653_1,
    -176.615_029_162_140_6,
    12.507_343_278_686_905,
    -0.138_571_095_265_720_12,
    9.984_369_578_019_572e-6,
    1.505_632_735_149_311_6e-7,
];

/// ln Γ(x) for x > 0 (Lanczos; relative error about 1e-15).
fn ln_gamma(x: f64) -> f64 {
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = LANCZOS.iter().enumerate().skip(1).fold(LANCZOS[0], |acc, (i, c)| acc + c / (x + i as f64));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz), for
/// x < (a + 1) / (a + b + 2), where it converges fast.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        for aa in [m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))] {
            d = 1.0 + aa * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + aa / c;
            c = if c.abs() < TINY { TINY } else { c };
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b), for a, b > 0 and x in [0, 1].
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` > 0 degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    let tail = 0.5 * inc_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t with `df` degrees of freedom: the t with P(T ≤ t) = p.
/// None unless 0 < p < 1 and df > 0 (both finite). Exact to about 1e-10.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0 && df > 0.0 && df.is_finite()) {
        return None;
    }
    if p < 0.5 {
        return t_quantile(1.0 - p, df).map(|t| -t);
    }
    // The quantile at p ≥ 0.5 is ≥ 0; widen the bracket until it holds p, then bisect.
    let mut hi = 1.0;
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return Some(hi);
        }
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df) < p {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo <= 1e-12 * hi.max(1.0) {
            break;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The two-sided critical value for a `level` interval (0.95: the 0.975 quantile).
pub fn two_sided(level: f64, df: f64) -> Option<f64> {
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    t_quantile(1.0 - (1.0 - level) / 2.0, df)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn quantiles_match_the_printed_table() {
        // Two-sided 95% (the 0.975 quantile), from the standard t table (three decimals).
        let table = [(1.0, 12.706), (2.0, 4.303), (3.0, 3.182), (4.0, 2.776), (9.0, 2.262), (30.0, 2.042)];
        for (df, want) in table {
            let got = t_quantile(0.975, df).unwrap();
            assert!(close(got, want, 5e-4), "t(0.975, {df}) = {got}, want {want}");
        }
        assert!(close(t_quantile(0.95, 10.0).unwrap(), 1.812, 5e-4));
        assert!(close(t_quantile(0.995, 5.0).unwrap(), 4.032, 5e-4));
        assert!(close(two_sided(0.99, 3.0).unwrap(), 5.841, 5e-4));
        // Many degrees of freedom: the normal's 1.95996.
        assert!(close(t_quantile(0.975, 1e7).unwrap(), 1.959_96, 1e-4));
    }

    #[test]
    fn the_cdf_has_known_values() {
        assert!(close(t_cdf(0.0, 3.0), 0.5, 1e-12));
        // df 1 is the Cauchy distribution: F(1) = 3/4.
        assert!(close(t_cdf(1.0, 1.0), 0.75, 1e-10));
        // df 2 has a closed form: F(t) = 1/2 + t / (2 sqrt(2 + t²)).
        for t in [-3.0, -0.5, 0.7, 2.0, 10.0] {
            let want = 0.5 + t / (2.0 * (2.0f64 + t * t).sqrt());
            assert!(close(t_cdf(t, 2.0), want, 1e-10), "t {t}");
        }
        assert_eq!(t_cdf(f64::INFINITY, 4.0), 1.0);
        assert!(t_cdf(1.0, 0.0).is_nan());
    }

    #[test]
    fn bad_arguments_have_no_quantile() {
        for (p, df) in [(0.0, 3.0), (1.0, 3.0), (0.5, 0.0), (f64::NAN, 2.0), (0.9, f64::INFINITY)] {
            assert_eq!(t_quantile(p, df), None, "p {p} df {df}");
        }
        assert_eq!(two_sided(1.0, 3.0), None);
        assert_eq!(t_quantile(0.5, 7.0).map(|t| t.abs() < 1e-9), Some(true));
    }

    proptest! {
        #[test]
        fn the_quantile_inverts_the_cdf(p in 0.001f64..0.999, df in 0.5f64..200.0) {
            let t = t_quantile(p, df).unwrap();
            prop_assert!((t_cdf(t, df) - p).abs() < 1e-9, "p {} df {} t {}", p, df, t);
        }

        #[test]
        fn the_quantile_is_symmetric_and_shrinks_with_df(p in 0.55f64..0.999, df in 1.0f64..100.0) {
            let (t, lower) = (t_quantile(p, df).unwrap(), t_quantile(1.0 - p, df).unwrap());
            prop_assert!((t + lower).abs() < 1e-8);
            prop_assert!(t_quantile(p, df + 1.0).unwrap() <= t + 1e-12);
        }
    }
}
