//! The monitor drawing during a bench cell: the real event loop (src/tui/event_loop.rs) over a
//! `TestBackend` 200x60, and key-to-screen latency: `?` sent through the loop's input, timed to
//! the end of the first drawn frame that shows the help panel opened (or closed again).

use ratatui::backend::{Backend, ClearType, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The title of the help panel: its presence on screen says the key was handled and drawn.
const HELP_TITLE: &str = "Help: keys and notation";

/// A key in flight: when it was sent and whether the help panel should then be open.
#[derive(Debug, Default)]
pub(crate) struct KeyProbe {
    pending: Option<(Instant, bool)>,
    /// Key-to-screen latencies, ms.
    pub latencies_ms: Vec<f64>,
    /// Frames drawn.
    pub frames: u64,
}

impl KeyProbe {
    /// A key was sent now; the help panel should be `open` in the frame that answers it.
    pub(crate) fn sent(&mut self, open: bool) {
        self.pending = Some((Instant::now(), open));
    }

    /// Whether a key still waits for its frame.
    pub(crate) fn waiting(&self) -> bool {
        self.pending.is_some()
    }
}

/// A `TestBackend` that times each flushed frame against the pending key.
pub(crate) struct TimedBackend {
    inner: TestBackend,
    probe: Arc<Mutex<KeyProbe>>,
}

impl TimedBackend {
    /// A `width` x `height` screen reporting to `probe`.
    pub(crate) fn new(width: u16, height: u16, probe: Arc<Mutex<KeyProbe>>) -> Self {
        Self { inner: TestBackend::new(width, height), probe }
    }

    fn help_shown(&self) -> bool {
        let text: String = self.inner.buffer().content.iter().map(Cell::symbol).collect();
        text.contains(HELP_TITLE)
    }
}

impl Backend for TimedBackend {
    type Error = std::convert::Infallible;

    fn draw<'a, I>(&mut self, content: I) -> Result<(), Self::Error>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> Result<(), Self::Error> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> Result<Position, Self::Error> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> Result<(), Self::Error> {
        self.inner.set_cursor_position(position)
    }
    fn clear(&mut self) -> Result<(), Self::Error> {
        self.inner.clear()
    }
    fn clear_region(&mut self, clear_type: ClearType) -> Result<(), Self::Error> {
        self.inner.clear_region(clear_type)
    }
    fn size(&self) -> Result<Size, Self::Error> {
        self.inner.size()
    }
    fn window_size(&mut self) -> Result<WindowSize, Self::Error> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        self.inner.flush()?;
        let mut p = self.probe.lock().unwrap_or_else(|e| e.into_inner());
        p.frames += 1;
        if let Some((at, open)) = p.pending
            && self.help_shown() == open
        {
            p.latencies_ms.push(at.elapsed().as_secs_f64() * 1e3);
            p.pending = None;
        }
        Ok(())
    }
}
