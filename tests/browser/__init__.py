"""Browser tests: the report and the dashboard in headless Chromium."""
