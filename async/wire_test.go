package async_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"netdisk/async"
)

// The work body on the wire is the queued Work's encoding, field for field:
// every field set, the two encode alike (a field added to one type and not
// carried by WorkWire, or a renamed tag, fails here).
func TestWorkWireEncodesLikeWork(t *testing.T) {
	var w async.Work
	v := reflect.ValueOf(&w).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + "-value")
		case reflect.Int64, reflect.Int:
			f.SetInt(int64(1000 + i))
		default:
			if f.Type() != reflect.TypeOf(time.Time{}) {
				t.Fatalf("field %s: type %s not covered by this test", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf(time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC).Add(time.Duration(i))))
		}
	}
	stored, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(async.WorkWire(w))
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal(stored, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wire, &b); err != nil {
		t.Fatal(err)
	}
	if len(a) != v.NumField() || !reflect.DeepEqual(a, b) {
		t.Fatalf("wire %s\nstored %s", wire, stored)
	}
}
