// A driver for Rancher's remotedialer, the tunnel library under Rancher's
// cluster agents and k3s's agent tunnel. remotedialer has no command of its
// own for this shape, so this program uses it as its own example server and
// client do, with TLS on the tunnel (wss), as Rancher deploys it:
//
//	remotedialer-peer server --listen 127.0.0.1:P --cert C --key K --forward 127.0.0.1:F --target 127.0.0.1:T
//	  [--user-token U --upstream-token A --upstream-ca CA]
//	remotedialer-peer client --connect wss://127.0.0.1:P/connect --ca C
//
// The server accepts the client's WebSocket on /connect and listens on
// --forward. In its plain shape every connection accepted there is dialled
// through the tunnel to --target on the client's side (server.Dialer, as the
// k3s server dials kubelets) and the bytes are copied both ways. With
// --user-token it has Rancher's shape instead: --forward serves HTTPS (the
// same certificate), checks each request's bearer token, and proxies it to
// the API server at --target over TLS through the tunnel (an
// httputil.ReverseProxy whose transport dials with server.Dialer), with the
// server's own credential for the cluster (--upstream-token) and the user
// impersonated, as Rancher's server proxies a user to a downstream cluster.
// Only the bench uses it (bench/tunnel/run.ts).
package main

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rancher/remotedialer"
	"github.com/sirupsen/logrus"
)

const clientID = "bench"

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: remotedialer-peer server|client [flags]")
	}
	logrus.SetLevel(logrus.WarnLevel)
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	switch os.Args[1] {
	case "server":
		listen := flags.String("listen", "127.0.0.1:0", "tunnel listen address")
		cert := flags.String("cert", "", "TLS certificate (PEM)")
		key := flags.String("key", "", "TLS key (PEM)")
		forward := flags.String("forward", "127.0.0.1:0", "address whose connections go through the tunnel")
		target := flags.String("target", "", "address the client dials for each connection")
		userToken := flags.String("user-token", "", "Rancher's shape: the bearer token users present (else: bytes only)")
		upstreamToken := flags.String("upstream-token", "", "Rancher's shape: the server's bearer token for the API server")
		upstreamCA := flags.String("upstream-ca", "", "Rancher's shape: the API server's CA (PEM)")
		_ = flags.Parse(os.Args[2:])
		handler, fwd := serve(*listen, *cert, *key, *forward)
		if *userToken == "" {
			forwardBytes(fwd, handler.Dialer(clientID), *target)
		} else {
			proxyHTTP(fwd, *cert, *key, handler.Dialer(clientID), *target, *userToken, *upstreamToken, *upstreamCA)
		}
	case "client":
		connect := flags.String("connect", "", "wss URL of the server's /connect")
		ca := flags.String("ca", "", "CA that signed the server's certificate (PEM)")
		_ = flags.Parse(os.Args[2:])
		runClient(*connect, *ca)
	default:
		log.Fatalf("unknown mode %q", os.Args[1])
	}
}

func serve(listen, cert, key, forward string) (*remotedialer.Server, net.Listener) {
	handler := remotedialer.New(func(req *http.Request) (string, bool, error) {
		id := req.Header.Get("X-Tunnel-ID")
		return id, id == clientID, nil
	}, remotedialer.DefaultErrorWriter)
	mux := http.NewServeMux()
	mux.Handle("/connect", handler)
	tunnel, err := net.Listen("tcp", listen)
	if err != nil {
		log.Fatal(err)
	}
	fwd, err := net.Listen("tcp", forward)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tunnel listening on %s\nforward listening on %s\n", tunnel.Addr(), fwd.Addr())
	go func() { log.Fatal(http.ServeTLS(tunnel, mux, cert, key)) }()
	return handler, fwd
}

func forwardBytes(fwd net.Listener, dial remotedialer.Dialer, target string) {
	for {
		conn, err := fwd.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			remote, err := dial(ctx, "tcp", target)
			cancel()
			if err != nil {
				log.Printf("dial through the tunnel: %v", err)
				return
			}
			defer remote.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(remote, conn); done <- struct{}{} }()
			go func() { _, _ = io.Copy(conn, remote); done <- struct{}{} }()
			<-done
		}()
	}
}

func runClient(connect, caFile string) {
	roots := loadRoots(caFile)
	dialer := &websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: roots}, HandshakeTimeout: 10 * time.Second}
	headers := http.Header{"X-Tunnel-ID": []string{clientID}}
	for {
		_ = remotedialer.ClientConnect(context.Background(), connect, headers, dialer,
			func(proto, address string) bool { return proto == "tcp" }, nil)
	}
}

func proxyHTTP(fwd net.Listener, cert, key string, dial remotedialer.Dialer, target, userToken, upstreamToken, caFile string) {
	roots := loadRoots(caFile)
	upstream := &url.URL{Scheme: "https", Host: target}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Header.Set("Authorization", "Bearer "+upstreamToken)
			r.Out.Header.Set("Impersonate-User", "bench")
			r.Out.Header.Set("Impersonate-Group", "system:masters")
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
				return dial(ctx, network, address)
			},
			TLSClientConfig:     &tls.Config{RootCAs: roots},
			MaxIdleConnsPerHost: 128,
		},
		FlushInterval: -1,
	}
	want := []byte("Bearer " + userToken)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for name := range r.Header {
			if len(name) > 11 && http.CanonicalHeaderKey(name[:11]) == "Impersonate" {
				r.Header.Del(name)
			}
		}
		proxy.ServeHTTP(w, r)
	})
	log.Fatal(http.ServeTLS(fwd, handler, cert, key))
}

func loadRoots(caFile string) *x509.CertPool {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		log.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		log.Fatalf("%s: no certificate", caFile)
	}
	return roots
}
