package api

// adminRoutes are the calls behind `netdisk admin`.
func (a *API) adminRoutes() []Route { return nil }
