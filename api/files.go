package api

// fileRoutes are the upload protocol (upload.go), file operations
// (fileops.go) and files' versions (versions.go).
func (a *API) fileRoutes() []Route {
	return append(append(a.uploadRoutes(), a.fsRoutes()...), a.versionRoutes()...)
}
