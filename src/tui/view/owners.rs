//! Prefix owners: prompt families x replicas: who owns each family's prefix now (`●`), how many
//! of its requests each replica served, the hot family marked `★`, and totals per replica.
//! While a routing phase runs it shows the live view; otherwise the selected finished phase.
//! Families that do not fit are summed in one `+N more` row, so the rows add up to `all`.

use super::super::app::App;
use super::super::theme;
use super::widgets::{fit, framed, panel};
use crate::cell::control::FamilyLive;
use crate::report::phase::RoutingPhase;
use crate::session::state::Attempt;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::collections::BTreeMap;

/// Marker of the owning replica.
pub(crate) const OWNER: &str = "●";
/// Marker of the hot family.
pub(crate) const HOT: &str = "★";
/// Width of the family column.
const FAMILY_W: usize = 7;

/// What the panel shows: a title, the families and the replica columns.
pub(crate) struct Owners {
    /// Panel title.
    pub title: String,
    /// One entry per prompt family.
    pub families: Vec<FamilyLive>,
    /// Replica columns, in order.
    pub names: Vec<String>,
}

/// The families of a finished routing phase (`tests/fixtures/seed_002.json` layout): owners from
/// `initial_prefix_owners`, requests from each replica's `family_counts`.
pub(crate) fn families_of(phase: &RoutingPhase) -> Vec<FamilyLive> {
    let mut out: BTreeMap<u32, FamilyLive> = BTreeMap::new();
    let hot = phase.config.hot_fraction > 0.0 || phase.scenario.starts_with("hot");
    let new = |f: u32| FamilyLive { family: f, hot: hot && f == 0, ..FamilyLive::default() };
    for (name, r) in &phase.replicas {
        for (&f, &n) in r.family_counts.iter().flatten() {
            out.entry(f).or_insert_with(|| new(f)).served.insert(name.clone(), n);
        }
    }
    for (&f, owners) in &phase.initial_prefix_owners {
        out.entry(f).or_insert_with(|| new(f)).owner = owners.first().cloned();
    }
    out.into_values().collect()
}

/// Replica columns: `first` in order, then any other replica the families name.
fn names_with(first: Vec<String>, families: &[FamilyLive]) -> Vec<String> {
    let mut names = first;
    for f in families {
        for n in f.served.keys().chain(f.owner.iter()) {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

/// The live families of the running phase, those of the selected finished phase, or after the
/// session those of the last phase as it ended.
pub(crate) fn owners(app: &App) -> Owners {
    let (live, last) = app.shown_live();
    let of_live = |title: String| {
        let first = live.replicas.iter().map(|r| r.name.clone()).collect();
        Owners { title, families: live.families.clone(), names: names_with(first, &live.families) }
    };
    if !live.families.is_empty() && !last {
        return of_live("Prefix owners (live)".into());
    }
    let selected = app.selected.and_then(|id| app.session.cells.get(id));
    if let Some((label, Attempt::Routing(p))) = selected.and_then(|c| Some((&c.label, c.latest.as_deref()?))) {
        let families = families_of(p);
        // The phase's replicas in their order first, as the live panel lists them, so the
        // columns do not swap when the phase ends.
        let names = names_with(p.replicas.keys().cloned().collect(), &families);
        return Owners { title: format!("Prefix owners: {label}"), families, names };
    }
    if !live.families.is_empty() {
        return of_live(format!("Prefix owners (final: {})", live.label));
    }
    Owners { title: "Prefix owners".into(), families: Vec::new(), names: Vec::new() }
}

/// Width of one replica's count column.
fn col_width(name: &str) -> usize {
    name.chars().count().clamp(5, 10) + 2
}

/// Width of the owner column: the longest replica name plus a space.
fn owner_width(names: &[String]) -> usize {
    names.iter().map(|n| n.chars().count()).max().unwrap_or(5).clamp(5, 11) + 1
}

/// Height the panel would like, borders included.
pub(crate) fn height(app: &App) -> u16 {
    (owners(app).families.len() as u16 + 4).max(5)
}

/// Width the panel would like, borders included.
pub(crate) fn width(app: &App) -> u16 {
    let names = owners(app).names;
    let cols: usize = names.iter().map(|n| col_width(n)).sum();
    (FAMILY_W + owner_width(&names) + cols + 2).clamp(28, 60) as u16
}

/// Width of the `others` column.
const OTHERS_W: usize = 8;

/// The replica columns drawn: all of them, or (too many for the width) the top replicas by
/// requests served (then families owned) and one `others` column summing the rest.
struct Columns {
    shown: Vec<String>,
    others: Vec<String>,
    /// Width of the owner column (owners in `others` are named there too).
    ow: usize,
}

impl Columns {
    fn fit(o: &Owners, width: usize) -> Self {
        let ow = owner_width(&o.names);
        let all: usize = FAMILY_W + ow + o.names.iter().map(|n| col_width(n)).sum::<usize>();
        if all <= width {
            return Self { shown: o.names.clone(), others: Vec::new(), ow };
        }
        let served = |n: &str| o.families.iter().filter_map(|f| f.served.get(n)).sum::<u64>();
        let owned = |n: &str| o.families.iter().filter(|f| f.owner.as_deref() == Some(n)).count();
        let mut ranked: Vec<(usize, &String)> = o.names.iter().enumerate().collect();
        ranked.sort_by_key(|(i, n)| (std::cmp::Reverse((served(n), owned(n))), *i));
        let mut room = width.saturating_sub(FAMILY_W + ow + OTHERS_W);
        let mut shown = Vec::new();
        let mut others = Vec::new();
        for (_, n) in ranked {
            if others.is_empty() && col_width(n) <= room {
                room -= col_width(n);
                shown.push(n.clone());
            } else {
                others.push(n.clone());
            }
        }
        Self { shown, others, ow }
    }

    fn served_by_others(&self, f: &FamilyLive) -> u64 {
        self.others.iter().filter_map(|n| f.served.get(n)).sum()
    }
}

fn header(c: &Columns) -> Line<'static> {
    let mut s = format!("{:<FAMILY_W$}{:<ow$}", "family", "owner", ow = c.ow);
    for n in &c.shown {
        let w = col_width(n);
        s.push_str(&format!("{:>w$}", fit(n, w - 2)));
    }
    if !c.others.is_empty() {
        s.push_str(&format!("{:>w$}", format!("+{}", c.others.len()), w = OTHERS_W - 1));
    }
    Line::styled(s, theme::dim())
}

fn family_line(f: &FamilyLive, c: &Columns) -> Line<'static> {
    let fam_style = if f.hot { theme::hot() } else { theme::label() };
    let fam = if f.hot { format!("{} {HOT}", f.family) } else { f.family.to_string() };
    let owner = f.owner.clone().unwrap_or_else(|| "—".into());
    let ow = c.ow;
    let mut spans = vec![
        Span::styled(format!("{fam:<FAMILY_W$}"), fam_style),
        Span::styled(format!("{:<ow$}", fit(&owner, ow - 1)), theme::value()),
    ];
    let top = f.served.values().copied().max().unwrap_or(0);
    for n in &c.shown {
        let w = col_width(n);
        let served = f.served.get(n).copied().unwrap_or(0);
        let mark = if f.owner.as_deref() == Some(n.as_str()) { OWNER } else { " " };
        let style = if served > 0 && served == top && f.hot { theme::hot() } else { Style::new() };
        spans.push(Span::styled(format!("{:>w$}", served, w = w - 1), style));
        spans.push(Span::styled(mark, theme::hot()));
    }
    if !c.others.is_empty() {
        let owned = f.owner.as_ref().is_some_and(|o| c.others.contains(o));
        spans.push(Span::styled(format!("{:>w$}", c.served_by_others(f), w = OTHERS_W - 1), theme::dim()));
        spans.push(Span::styled(if owned { OWNER } else { " " }, theme::hot()));
    }
    Line::from(spans)
}

/// A totals row over `families`: `all` (every family) or `+3 more` (those not shown), so the
/// rows on screen always add up to `all`.
fn sum_line(label: &str, families: &[FamilyLive], c: &Columns) -> Line<'static> {
    let w = FAMILY_W + c.ow;
    let mut spans = vec![Span::styled(format!("{:<w$}", label), theme::label())];
    for n in &c.shown {
        let w = col_width(n);
        let total: u64 = families.iter().map(|f| f.served.get(n).copied().unwrap_or(0)).sum();
        spans.push(Span::styled(format!("{:>w$} ", total, w = w - 1), theme::value()));
    }
    if !c.others.is_empty() {
        let total: u64 = families.iter().map(|f| c.served_by_others(f)).sum();
        spans.push(Span::styled(format!("{:>w$} ", total, w = OTHERS_W - 1), theme::value()));
    }
    Line::from(spans)
}

/// The header, the families that fit in `rows` lines, a `+N more` row summing the others,
/// and the `all` row; replica columns as [`Columns::fit`] in `width` allows.
fn table(o: &Owners, rows: usize, width: usize) -> Vec<Line<'static>> {
    let c = Columns::fit(o, width);
    let room = rows.saturating_sub(2);
    let shown = if o.families.len() <= room { o.families.len() } else { room.saturating_sub(1) };
    let mut out = vec![header(&c)];
    out.extend(o.families.iter().take(shown).map(|f| family_line(f, &c)));
    let rest = &o.families[shown..];
    if !rest.is_empty() {
        let label = format!("+{} more", rest.len());
        out.push(sum_line(&label, rest, &c).patch_style(theme::dim()));
    }
    out.push(sum_line("all", &o.families, &c));
    out
}

/// The panel title: with the `others` column, how many replicas have a column of their own
/// and how many are summed in it.
fn title(o: &Owners, width: usize) -> String {
    let c = Columns::fit(o, width);
    match c.others.len() {
        0 => o.title.clone(),
        n => format!("{} · top {}/{}, +{n} summed", o.title, c.shown.len(), o.names.len()),
    }
}

/// Draws the prefix-owner panel.
pub(crate) fn render(app: &App, area: Rect, buf: &mut Buffer) {
    let o = owners(app);
    let inner = framed(panel(title(&o, usize::from(area.width.saturating_sub(2)))), area, buf);
    if o.families.is_empty() {
        let msg = "no prompt families here: select a routing phase";
        buf.set_line(inner.x, inner.y, &Line::styled(msg, theme::dim()), inner.width);
        return;
    }
    let out = table(&o, usize::from(inner.height), usize::from(inner.width));
    for (i, line) in out.iter().enumerate().take(usize::from(inner.height)) {
        buf.set_line(inner.x, inner.y + i as u16, line, inner.width);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_phase_gives_owners_and_counts() {
        use crate::report::phase::ReplicaRecord;
        let counts =
            |c: &[(u32, u64)]| ReplicaRecord { family_counts: Some(c.iter().copied().collect()), ..Default::default() };
        let v = RoutingPhase {
            scenario: "hot90".into(),
            replicas: [("A".to_string(), counts(&[(0, 34), (4, 1)])), ("B".to_string(), counts(&[(0, 52), (1, 2)]))]
                .into(),
            initial_prefix_owners: [(0, vec!["B".to_string()]), (1, vec!["B".into()]), (4, vec!["A".into()])].into(),
            ..RoutingPhase::default()
        };
        let f = families_of(&v);
        assert_eq!(f.iter().map(|f| f.family).collect::<Vec<_>>(), [0, 1, 4]);
        assert!(f[0].hot && !f[1].hot);
        assert_eq!(f[0].owner.as_deref(), Some("B"));
        assert_eq!(f[0].served.get("A"), Some(&34));
        assert_eq!(names_with(Vec::new(), &f), ["A", "B"]);
        // Family 0 served by B alone put B first: the phase's replicas lead, in their order.
        let only_b = RoutingPhase {
            replicas: [("A".to_string(), counts(&[(4, 1)])), ("B".to_string(), counts(&[(0, 52)]))].into(),
            ..v.clone()
        };
        let f = families_of(&only_b);
        assert_eq!(names_with(Vec::new(), &f), ["B", "A"], "the order the panel showed at DONE");
        assert_eq!(names_with(only_b.replicas.keys().cloned().collect(), &f), ["A", "B"]);
    }

    #[test]
    fn families_that_do_not_fit_are_summed_in_a_more_row() {
        let app = crate::tui::fixtures::routing_imbalance();
        let o = owners(&app);
        let text = |l: &Line<'_>| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>();
        let small: Vec<String> = table(&o, 7, 200).iter().map(text).collect();
        assert_eq!(small.len(), 7);
        assert!(small[4].starts_with("3 "), "{small:?}");
        assert_eq!(small[5].split_whitespace().collect::<Vec<_>>(), ["+4", "more", "27", "0"]);
        assert_eq!(small[6].split_whitespace().collect::<Vec<_>>(), ["all", "27", "69"]);
        let tall: Vec<String> = table(&o, 10, 200).iter().map(text).collect();
        assert_eq!(tall.len(), 10);
        assert!(!tall.iter().any(|l| l.contains("more")), "{tall:?}");
    }
}
