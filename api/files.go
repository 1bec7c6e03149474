package api

// fileRoutes are the upload protocol (upload.go) and file operations (fileops.go).
func (a *API) fileRoutes() []Route {
	return append(a.uploadRoutes(), a.fsRoutes()...)
}
