package drive

import "testing"

func TestRebase(t *testing.T) {
	for _, c := range []struct{ p, from, to, want string }{
		{"/a", "/", "/", "/a"},
		{"/", "/", "/pub", "/pub"},
		{"/a/b", "/", "/pub", "/pub/a/b"},
		{"/pub", "/pub", "/", "/"},
		{"/pub/a/b", "/pub", "/", "/a/b"},
		{"/work/x/a", "/work/x", "/x", "/x/a"},
		{"/work/x", "/work/x", "/x", "/x"},
		{"/work/bx/a", "/work/bx", "/x", "/x/a"},
		{"/x/a", "/x", "/work/x", "/work/x/a"},
		{"/many/f1", "/many", "/many", "/many/f1"},
		{"/m/f1", "/m", "/many", "/many/f1"},
	} {
		if got := rebase(c.p, c.from, c.to); got != c.want {
			t.Errorf("rebase(%q, %q, %q) = %q, want %q", c.p, c.from, c.to, got, c.want)
		}
	}
}
