package api

// The endpoints the Nextcloud and ownCloud sync clients call besides WebDAV:
// status.php, which tells them a server is there, and the OCS calls for what
// the server can do (capabilities) and who is signed in (cloud/user). Their
// shapes are the clients' (nextcloud/desktop src/libsync/capabilities.cpp,
// userinfo.cpp); the values are netdisk's.

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"

	"netdisk/errs"
	"netdisk/meta"
)

// ocsVersion is the server version status.php and the capabilities claim.
// The clients compare it with the minimum versions of the features they
// use; a current Nextcloud's number leaves the decision to the
// capabilities, which say what netdisk really serves.
const (
	ocsMajor         = 28
	ocsVersionString = "28.0.0"
	ocsVersion       = "28.0.0.0"
)

// ocsPollInterval is the seconds between the clients' remote checks that
// the capabilities suggest (the desktop client's default is 30 s).
const ocsPollInterval = 30

// StatusPHP answers GET /status.php: the first request of every sync client,
// asked before any credentials.
func (a *API) StatusPHP(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]any{
		"installed":       true,
		"maintenance":     false,
		"needsDbUpgrade":  false,
		"version":         ocsVersion,
		"versionstring":   ocsVersionString,
		"edition":         "",
		"productname":     "netdisk",
		"extendedSupport": false,
	})
}

type ocsMeta struct {
	Status     string `json:"status" xml:"status"`
	StatusCode int    `json:"statuscode" xml:"statuscode"`
	Message    string `json:"message" xml:"message"`
}

type ocsEnvelope struct {
	XMLName xml.Name `json:"-" xml:"ocs"`
	Meta    ocsMeta  `json:"meta" xml:"meta"`
	Data    any      `json:"data" xml:"data"`
}

// writeOCS answers an OCS call with data, in JSON when the request asks
// for it (format=json, or Accept naming JSON: what the clients send) and in
// XML otherwise, as the OCS API does. v1 says success with status code 100,
// v2 with the HTTP status.
func writeOCS(w http.ResponseWriter, r *http.Request, data any) {
	writeOCSResult(w, r, http.StatusOK, "OK", data)
}

// writeOCSError answers an OCS call that failed with err, with the status
// codes the clients read: 404 for what does not exist (or is not the
// user's), 403 for what is refused, 400 for the rest of the caller's
// mistakes; v2 as the HTTP status too, v1 only in the body (its HTTP
// status is 200 but for 401), as Nextcloud answers.
func writeOCSError(w http.ResponseWriter, r *http.Request, err error) {
	code := Status(err)
	switch {
	case code == http.StatusNotFound, code == http.StatusForbidden, code == http.StatusUnauthorized:
	case code >= 400 && code < 500 && code != http.StatusTooManyRequests:
		code = http.StatusBadRequest
	}
	errs.SetErrorHeaders(w.Header(), code)
	writeOCSResult(w, r, code, errs.Message(err), ocsEmpty{})
}

// WriteOCSError answers an OCS call refused before its handler (the
// server's sign-in rules).
func WriteOCSError(w http.ResponseWriter, r *http.Request, err error) { writeOCSError(w, r, err) }

// ocsEmpty is an error's data: [] in JSON, an empty element in XML.
type ocsEmpty struct{}

func (ocsEmpty) MarshalJSON() ([]byte, error) { return []byte("[]"), nil }

func writeOCSResult(w http.ResponseWriter, r *http.Request, code int, message string, data any) {
	status, httpStatus, metaCode := "ok", code, code
	if code >= 300 {
		status = "failure"
	}
	if !strings.HasPrefix(r.URL.Path, "/ocs/v2.php/") {
		httpStatus = http.StatusOK
		if code == http.StatusUnauthorized {
			httpStatus = code
		}
		if code == http.StatusOK {
			metaCode = 100
		}
	}
	env := ocsEnvelope{Meta: ocsMeta{Status: status, StatusCode: metaCode, Message: message}, Data: data}
	if r.URL.Query().Get("format") == "json" ||
		(r.URL.Query().Get("format") == "" && strings.Contains(r.Header.Get("Accept"), "application/json")) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(httpStatus)
		json.NewEncoder(w).Encode(map[string]any{"ocs": env})
		return
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(httpStatus)
	w.Write([]byte(xml.Header))
	xml.NewEncoder(w).Encode(env) // the status is out; a broken connection has no one to tell
}

type ocsServerVersion struct {
	Major           int    `json:"major" xml:"major"`
	Minor           int    `json:"minor" xml:"minor"`
	Micro           int    `json:"micro" xml:"micro"`
	String          string `json:"string" xml:"string"`
	Edition         string `json:"edition" xml:"edition"`
	ExtendedSupport bool   `json:"extendedSupport" xml:"extendedSupport"`
}

// ocsCapabilities are the capabilities the clients read. Each says what
// netdisk does, not what Nextcloud does:
//   - dav.chunking "1.0": chunked upload v2 under /remote.php/dav/uploads/;
//   - checksums: the content sums a PUT's OC-Checksum may carry (verified)
//     and listings give in oc:checksums; SHA1 preferred, the one always
//     kept beside MD5;
//   - files.undelete and versioning: the trash and the versions exist
//     (/remote.php/dav/trashbin/ and versions/);
//   - files_sharing: the OCS share API (ocsshares.go) over public links
//     and shares with users and groups; no resharing, no mail, no
//     enforced password or default expiry.
type ocsCapabilities struct {
	Core struct {
		PollInterval int    `json:"pollinterval" xml:"pollinterval"`
		WebDAVRoot   string `json:"webdav-root" xml:"webdav-root"`
	} `json:"core" xml:"core"`
	DAV struct {
		Chunking string `json:"chunking" xml:"chunking"`
	} `json:"dav" xml:"dav"`
	Checksums struct {
		SupportedTypes      []string `json:"supportedTypes" xml:"supportedTypes>element"`
		PreferredUploadType string   `json:"preferredUploadType" xml:"preferredUploadType"`
	} `json:"checksums" xml:"checksums"`
	Files struct {
		BigFileChunking bool `json:"bigfilechunking" xml:"bigfilechunking"`
		Undelete        bool `json:"undelete" xml:"undelete"`
		Versioning      bool `json:"versioning" xml:"versioning"`
	} `json:"files" xml:"files"`
	FilesSharing ocsSharingCaps `json:"files_sharing" xml:"files_sharing"`
}

type ocsEnabled struct {
	Enabled bool `json:"enabled" xml:"enabled"`
}

type ocsSharingCaps struct {
	APIEnabled bool `json:"api_enabled" xml:"api_enabled"`
	Public     struct {
		Enabled  bool `json:"enabled" xml:"enabled"`
		Password struct {
			Enforced               bool `json:"enforced" xml:"enforced"`
			AskForOptionalPassword bool `json:"askForOptionalPassword" xml:"askForOptionalPassword"`
		} `json:"password" xml:"password"`
		ExpireDate      ocsEnabled `json:"expire_date" xml:"expire_date"`
		MultipleLinks   bool       `json:"multiple_links" xml:"multiple_links"`
		SendMail        bool       `json:"send_mail" xml:"send_mail"`
		Upload          bool       `json:"upload" xml:"upload"`
		UploadFilesDrop bool       `json:"upload_files_drop" xml:"upload_files_drop"`
	} `json:"public" xml:"public"`
	Resharing bool `json:"resharing" xml:"resharing"`
	User      struct {
		SendMail   bool       `json:"send_mail" xml:"send_mail"`
		ExpireDate ocsEnabled `json:"expire_date" xml:"expire_date"`
	} `json:"user" xml:"user"`
	GroupSharing bool `json:"group_sharing" xml:"group_sharing"`
	Group        struct {
		Enabled    bool       `json:"enabled" xml:"enabled"`
		ExpireDate ocsEnabled `json:"expire_date" xml:"expire_date"`
	} `json:"group" xml:"group"`
	DefaultPermissions int `json:"default_permissions" xml:"default_permissions"`
	Federation         struct {
		Outgoing bool `json:"outgoing" xml:"outgoing"`
		Incoming bool `json:"incoming" xml:"incoming"`
	} `json:"federation" xml:"federation"`
}

type ocsCapabilitiesData struct {
	Version      ocsServerVersion `json:"version" xml:"version"`
	Capabilities ocsCapabilities  `json:"capabilities" xml:"capabilities"`
}

// OCSCapabilities answers GET /ocs/v{1,2}.php/cloud/capabilities.
func (a *API) OCSCapabilities(w http.ResponseWriter, r *http.Request, _ meta.User) {
	var c ocsCapabilities
	c.Core.PollInterval = ocsPollInterval
	c.Core.WebDAVRoot = "remote.php/webdav"
	c.DAV.Chunking = "1.0"
	c.Checksums.SupportedTypes = []string{"SHA1", "MD5"}
	c.Checksums.PreferredUploadType = "SHA1"
	c.Files.BigFileChunking = true
	c.Files.Undelete = true
	c.Files.Versioning = true
	sh := &c.FilesSharing
	sh.APIEnabled, sh.Public.Enabled, sh.Public.MultipleLinks = true, true, true
	// A link's expiry may be set (it is not by default, so expire_date,
	// which says a default applies, is off); upload-only links (a file
	// drop: permissions 4) take uploads through their page, read-write
	// links through their page and over WebDAV.
	sh.Public.Upload, sh.Public.UploadFilesDrop = true, true
	sh.GroupSharing, sh.Group.Enabled = true, true
	sh.DefaultPermissions = ocsPermRead
	writeOCS(w, r, ocsCapabilitiesData{
		Version:      ocsServerVersion{Major: ocsMajor, String: ocsVersionString},
		Capabilities: c,
	})
}

type ocsQuota struct {
	Free     int64   `json:"free" xml:"free"`
	Used     int64   `json:"used" xml:"used"`
	Total    int64   `json:"total" xml:"total"`
	Relative float64 `json:"relative" xml:"relative"`
	Quota    int64   `json:"quota" xml:"quota"`
}

type ocsUser struct {
	ID          string   `json:"id" xml:"id"`
	DisplayName string   `json:"display-name" xml:"display-name"`
	Email       string   `json:"email" xml:"email"`
	Quota       ocsQuota `json:"quota" xml:"quota"`
}

// ocsUnlimited is the quota Nextcloud reports for an account without one
// (its SPACE_UNLIMITED); the clients show no limit for it.
const ocsUnlimited = -3

// OCSUser answers GET /ocs/v{1,2}.php/cloud/user: the signed-in account and
// its quota. used counts what the quota counts (files, metadata and open
// uploads), so used plus free is the quota.
func (a *API) OCSUser(w http.ResponseWriter, r *http.Request, u meta.User) {
	q, err := a.D.QuotaOf(r.Context(), u.ID)
	if err != nil {
		textError(w, r, err)
		return
	}
	used := q.Finished + q.Metadata + max(q.Uploading, q.Unfinished)
	oq := ocsQuota{Used: used, Free: q.Free(), Total: q.Total, Quota: q.Total}
	if q.Total <= 0 {
		oq.Quota, oq.Free, oq.Total = ocsUnlimited, ocsUnlimited, ocsUnlimited
	} else {
		oq.Relative = float64(int64(float64(used)/float64(q.Total)*10000)) / 100
	}
	writeOCS(w, r, ocsUser{ID: u.Name, DisplayName: u.Name, Quota: oq})
}
