pub mod fake_as;
