package apitype

// SearchResult answers GET /api/v1/search: a page of matches, newest first.
// Next, when not "", is the cursor of the next page (passed back as
// cursor= with the same query); "" on the last page.
type SearchResult struct {
	Hits []Node `json:"hits"`
	Next string `json:"next,omitempty"`
}
