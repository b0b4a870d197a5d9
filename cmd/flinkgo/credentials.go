package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flinkgo/flinkgo/runtime/server/listen"
)

// TokenEnv holds the bearer token of a TCP server for the clients.
const TokenEnv = "FLINKGO_TOKEN"

// credentialFlags are the control commands' flags that authenticate to a
// server: the token of a TCP server and TLS.
type credentialFlags struct {
	token, tokenFile       string
	tls                    bool
	tlsCA, tlsCert, tlsKey string
}

func (c *credentialFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.token, "token", "", "TCP: the server's token (default: --token-file, else $"+TokenEnv+", else the server's default token file when readable)")
	fs.StringVar(&c.tokenFile, "token-file", "", "TCP: a file holding the server's token")
	fs.BoolVar(&c.tls, "tls", false, "TCP: connect with TLS, trusting the system's roots unless --tls-ca is given")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "TCP: connect with TLS, trusting this PEM CA")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TCP: present this PEM client certificate (mutual TLS)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TCP: the PEM private key of --tls-cert")
}

// dialOptions returns the gRPC dial options that reach endpoint with the
// flags' credentials.
func (c *credentialFlags) dialOptions(endpoint string) ([]grpc.DialOption, error) {
	if strings.HasPrefix(endpoint, "unix:") {
		// The server admits a Unix peer by its uid; no credentials travel.
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	var opts []grpc.DialOption
	tlsOn := c.tls || c.tlsCA != "" || c.tlsCert != ""
	if tlsOn {
		cfg, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	token, err := c.resolveToken()
	if err != nil {
		return nil, err
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token}))
	}
	return opts, nil
}

// resolveToken picks the token: --token, --token-file, $FLINKGO_TOKEN,
// else the server's default token file when this user can read it (a
// server of this user on this host); "" when there is none.
func (c *credentialFlags) resolveToken() (string, error) {
	if c.token != "" {
		return c.token, nil
	}
	path := c.tokenFile
	if path == "" {
		if env := os.Getenv(TokenEnv); env != "" {
			return strings.TrimSpace(env), nil
		}
		path = filepath.Join(listen.DefaultDir(), listen.TokenName)
		if _, err := os.Stat(path); err != nil {
			return "", nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("the token file %s is empty", path)
	}
	return token, nil
}

func (c *credentialFlags) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", c.tlsCA)
		}
		cfg.RootCAs = pool
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, errors.New("a client certificate needs both --tls-cert and --tls-key")
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", c.tlsCert, c.tlsKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bearer sends the token with every call.
type bearer struct{ token string }

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false: a server without TLS listens on
// loopback only, where the token does not cross the network.
func (b bearer) RequireTransportSecurity() bool { return false }
