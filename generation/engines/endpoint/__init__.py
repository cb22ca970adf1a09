"""The endpoint engine: models served elsewhere (docs/domain.md, 'Models behind an endpoint'). `engine` is the
`ModelEngine`; `client` sends requests, each once, and stores the replies; `registration` checks an endpoint when a
model is registered."""
