package api

// fileRoutes are the upload protocol and file operations.
func (a *API) fileRoutes() []Route { return nil }
