//! Recovery at open, shared by segments and the claims log: what a check can find
//! ([`Problem`]), what the decision table does about it ([`decide`]), and the repairs ([`apply`]).

mod problem;
mod repair;
mod table;

pub use problem::Problem;
pub use repair::{apply, torn_file_name, TORN_INFIX};
pub use table::{decide, plan, RecoveryReport, Repair};
