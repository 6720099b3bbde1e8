package apiserver

// openAPIDocs returns descriptions for OpenAPI schemas.
func openAPIDocs() map[string]string { return nil }
