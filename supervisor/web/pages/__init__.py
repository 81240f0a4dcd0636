"""What each page shows, read from the database without a request: one module per page
(overview, task list, task detail, thread), the flag cards several of them show, and what
makes a page live.

The views (HTTP) and the fragments (live pushes) both build their template context here,
so a live update renders exactly what a reload would. Each builder runs a fixed handful
of queries, whatever the number of rows; the queries and the advice they show live in
core (core.queries.overview, core.actions.advice): a page only shapes them."""
