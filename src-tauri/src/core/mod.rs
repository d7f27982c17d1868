pub mod model;
pub mod paths;
