package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readSecret asks for a password on the terminal behind stdin. Echo is
// turned off before the prompt is printed: a user (or a program driving the
// terminal) who types as soon as the prompt shows must never see the secret
// echoed, which term.ReadPassword allows since it prints nothing itself and
// turns echo off only once called, after our prompt is already out.
func readSecret(w io.Writer, prompt string) (string, error) {
	fd := int(os.Stdin.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	quiet.Lflag |= unix.ICANON | unix.ISIG
	quiet.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &quiet); err != nil {
		return "", fmt.Errorf("read password: %w", err)
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, old)

	fmt.Fprint(w, prompt)
	defer fmt.Fprintln(w)
	// One byte at a time: nothing past the newline is taken from stdin
	// (the next prompt reads it).
	var line []byte
	var b [1]byte
	for {
		n, err := os.Stdin.Read(b[:])
		if n == 1 {
			switch b[0] {
			case '\n':
				return string(line), nil
			case '\r':
				continue
			}
			line = append(line, b[0])
		}
		if err == io.EOF && len(line) > 0 {
			return string(line), nil
		}
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
	}
}
