//! Tests of the hyper-util stream path.

use super::*;
