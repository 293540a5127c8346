pub mod fake_as;
pub mod rotating_as;
