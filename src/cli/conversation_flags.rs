//! The flags of the conversation experiment (`run --plan conversation`, issue 24): sessions
//! per cell, turns, the history a turn sends, the think time and the session header.

use crate::config::conversation::{ConversationConfig, History, ThinkTime};
use crate::dataset::FileFormat;
use clap::Args;

/// `--num-conversations`, `--turns`, `--turn-input-len`, `--history`, `--think-time`,
/// `--session-header`.
#[derive(Debug, Clone, Default, Args)]
pub struct ConversationFlags {
    /// Conversations (sessions) each conversation cell runs [default: 16].
    #[arg(long, value_name = "N")]
    pub num_conversations: Option<u32>,
    /// Most turns a conversation sends; a dataset conversation with fewer user turns sends its
    /// own [default: 4].
    #[arg(long, value_name = "N")]
    pub turns: Option<u32>,
    /// Tokens of each user message of a generated conversation (no --dataset-path) [default: 128].
    #[arg(long, value_name = "TOKENS", value_parser = super::run_bounds::tokens)]
    pub turn_input_len: Option<u64>,
    /// What each turn sends before its new message: `dataset` (the conversation's own earlier
    /// turns) or `model` (the answers the server actually streamed) [default: dataset].
    #[arg(long, value_enum)]
    pub history: Option<History>,
    /// A user's pause between an answer and the next message: `0`, `2s`, `exp:2s` (exponential
    /// with that mean) or `uniform:1s..3s` [default: 0].
    #[arg(long, value_name = "DIST", value_parser = ThinkTime::parse)]
    pub think_time: Option<ThinkTime>,
    /// A header that carries the conversation's id on each of its requests (session affinity
    /// for a gateway that routes on it, e.g. `x-session-id`).
    #[arg(long, value_name = "NAME", value_parser = header_name)]
    pub session_header: Option<String>,
}

fn header_name(s: &str) -> Result<String, String> {
    reqwest::header::HeaderName::from_bytes(s.trim().as_bytes())
        .map(|h| h.as_str().to_string())
        .map_err(|_| format!("{s}: not an HTTP header name"))
}

impl ConversationFlags {
    /// The first of these flags given, by its name, if any.
    fn any_given(&self) -> Option<&'static str> {
        [
            (self.num_conversations.is_some(), "--num-conversations"),
            (self.turns.is_some(), "--turns"),
            (self.turn_input_len.is_some(), "--turn-input-len"),
            (self.history.is_some(), "--history"),
            (self.think_time.is_some(), "--think-time"),
            (self.session_header.is_some(), "--session-header"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The settings, checked against the plan (`planned`: `--plan conversation` given) and the
    /// dataset format `--dataset-name` names, if a file one.
    pub fn config(&self, planned: bool, dataset: Option<FileFormat>) -> Result<ConversationConfig, String> {
        if let (false, Some(flag)) = (planned, self.any_given()) {
            return Err(format!("{flag} shapes the conversation experiment: add --plan conversation"));
        }
        if planned && dataset == Some(FileFormat::Custom) {
            return Err("--dataset-name custom has one prompt a line: a conversation needs sharegpt".into());
        }
        let d = ConversationConfig::default();
        let cfg = ConversationConfig {
            conversations: self.num_conversations.unwrap_or(d.conversations),
            turns: self.turns.unwrap_or(d.turns),
            user_tokens: self.turn_input_len.unwrap_or(d.user_tokens),
            history: self.history.unwrap_or(d.history),
            think: self.think_time.unwrap_or(d.think),
            session_header: self.session_header.clone(),
            dataset: None,
        };
        for (n, flag) in [
            (cfg.conversations.into(), "--num-conversations"),
            (cfg.turns.into(), "--turns"),
            (cfg.user_tokens, "--turn-input-len"),
        ] {
            if n == 0 {
                return Err(format!("{flag} 0: a conversation needs at least 1"));
            }
        }
        if dataset.is_some() && self.turn_input_len.is_some() {
            return Err(
                "--turn-input-len sizes generated conversations: a --dataset-path file has its own messages".into()
            );
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_flags_need_the_plan_and_a_conversation_dataset() {
        let f = ConversationFlags { turns: Some(3), ..Default::default() };
        assert_eq!(
            f.config(false, None).unwrap_err(),
            "--turns shapes the conversation experiment: add --plan conversation"
        );
        assert_eq!(f.config(true, None).unwrap().turns, 3);
        let e = ConversationFlags::default().config(true, Some(FileFormat::Custom)).unwrap_err();
        assert!(e.contains("a conversation needs sharegpt"), "{e}");
        let zero = ConversationFlags { turns: Some(0), ..Default::default() };
        assert_eq!(zero.config(true, None).unwrap_err(), "--turns 0: a conversation needs at least 1");
        let sized = ConversationFlags { turn_input_len: Some(64), ..Default::default() };
        assert!(
            sized.config(true, Some(FileFormat::ShareGpt)).unwrap_err().starts_with("--turn-input-len sizes generated")
        );
        let d = ConversationFlags::default().config(false, None).unwrap();
        assert_eq!((d.conversations, d.turns, d.user_tokens, d.history), (16, 4, 128, History::Dataset));
        let think =
            ConversationFlags { think_time: Some(ThinkTime::Fixed(Duration::from_secs(1))), ..Default::default() };
        assert!(think.config(true, Some(FileFormat::ShareGpt)).is_ok());
        assert_eq!(header_name("X-Session-Id").unwrap(), "x-session-id");
        assert!(header_name("bad header").is_err());
    }
}
