//! Builders for model objects in upstream's test address convention.
