//! How the monitor shows a fleet of many replicas: the scroll offset of the replicas panel
//! (PgDn / PgUp) and the row order (`o`: by name, or by load). Pure state; the views read it.

/// Order of the replica rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// As configured (name order of the flags or the simulator).
    #[default]
    Name,
    /// Busiest first: running + waiting, then requests served.
    Load,
}

/// A scroll or order change of the fleet panels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetKey {
    /// PgDn: the next page of replicas.
    PageDown,
    /// PgUp: the previous page.
    PageUp,
    /// `o`: switch the order between name and load.
    ToggleOrder,
}

/// Scroll and order of the replica rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetView {
    /// First replica shown (rows before it are hidden above); clamped by the views.
    pub scroll: usize,
    /// Page size the views last drew (replicas per PgDn); 0 before the first frame.
    pub page: std::cell::Cell<usize>,
    /// Largest first row the views last allowed (rows less room); PgDn stops there, so a
    /// press past the last page, or on a panel where every replica fits, is not remembered.
    pub last_first: std::cell::Cell<usize>,
    /// Row order.
    pub order: Order,
}

impl FleetView {
    /// Applies a key.
    pub fn apply(&mut self, key: FleetKey) {
        let step = self.page.get().max(1);
        match key {
            FleetKey::PageDown => self.scroll = (self.scroll + step).min(self.last_first.get()),
            FleetKey::PageUp => self.scroll = self.scroll.min(self.last_first.get()).saturating_sub(step),
            FleetKey::ToggleOrder => {
                self.order = match self.order {
                    Order::Name => Order::Load,
                    Order::Load => Order::Name,
                };
                self.scroll = 0;
            }
        }
    }

    /// The first row to show of `total` rows with room for `room`: the scroll offset, kept
    /// so that the last page is full.
    pub fn first(&self, total: usize, room: usize) -> usize {
        self.last_first.set(total.saturating_sub(room.max(1)));
        self.scroll.min(self.last_first.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_move_by_the_drawn_page_and_stay_in_range() {
        let mut f = FleetView { page: 10.into(), ..FleetView::default() };
        f.apply(FleetKey::PageDown);
        assert_eq!(f.scroll, 0, "before a frame, or with every row shown, PgDn is not remembered");
        f.first(64, 10);
        f.apply(FleetKey::PageDown);
        f.apply(FleetKey::PageDown);
        assert_eq!(f.scroll, 20);
        assert_eq!(f.first(64, 10), 20);
        for _ in 0..10 {
            f.apply(FleetKey::PageDown);
        }
        assert_eq!(f.scroll, 54, "PgDn stops at the last page");
        f.apply(FleetKey::PageUp);
        assert_eq!(f.scroll, 44, "one PgUp after running past the end moves back one page");
        assert_eq!(f.first(25, 10), 15, "the last page is full");
        f.apply(FleetKey::PageUp);
        assert_eq!(f.scroll, 5);
        f.apply(FleetKey::ToggleOrder);
        assert_eq!((f.order, f.scroll), (Order::Load, 0));
        f.apply(FleetKey::PageUp);
        assert_eq!(f.scroll, 0);
    }
}
