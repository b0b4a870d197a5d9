package config

import (
	"fmt"
	"strconv"
	"time"
)

// DefaultInt is the registry's default of the integer key name, for the
// packages whose options it sets when the config does not (the registry
// entry is the one place the default is written). It panics when name is
// not registered or its default is no integer: a bug of the runtime that
// the registry's tests and every start catch.
func DefaultInt(name string) int {
	n, err := strconv.Atoi(registered(name).Default)
	if err != nil {
		panic(fmt.Sprintf("config: the default of %s: %v", name, err))
	}
	return n
}

// DefaultDuration is DefaultInt for a duration key.
func DefaultDuration(name string) time.Duration {
	d, err := ParseDuration(registered(name).Default)
	if err != nil {
		panic(fmt.Sprintf("config: the default of %s: %v", name, err))
	}
	return d
}

func registered(name string) Key {
	k, ok := Known().Lookup(name)
	if !ok {
		panic(fmt.Sprintf("config: key %s is not registered", name))
	}
	return k
}
