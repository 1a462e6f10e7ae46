// Package security is kgo-broker's authentication: TLS with Kafka's ssl.*
// keys, SASL with PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER as Kafka's
// SaslServerAuthenticator and its mechanisms' SaslServers, and the
// principal every request carries (protocol.Principal, Kafka's
// KafkaPrincipal as DefaultKafkaPrincipalBuilder builds it). It imports
// protocol (whose Server runs the exchange) and no config: its settings come
// through Props, which the broker implements over config.Config and the
// metadata image's dynamic broker configs.
//
// # A connection, by security protocol
//
//	PLAINTEXT       accept ───────────────────────────────────────► requests as User:ANONYMOUS
//	SSL             accept ─► TLS handshake ─► principal from the ──► requests as User:CN=...
//	                          (keystore,       client certificate     (ssl.principal.mapping.rules)
//	                          truststore,      or User:ANONYMOUS
//	                          ssl.client.auth)
//	SASL_PLAINTEXT  accept ─────────────────► ApiVersions? ─► SaslHandshake ─► SaslAuthenticate* ─► requests as User:<name>
//	SASL_SSL        accept ─► TLS handshake ─► (same as SASL_PLAINTEXT)
//
// protocol.Server does the I/O (protocol/auth_conn.go): the TLS handshake
// on the connection's goroutine (never the accept loop), then, on a SASL
// listener, one frame at a time of at most sasl.server.max.receive.size
// until the exchange completes; a request other than ApiVersions,
// SaslHandshake or SaslAuthenticate before that closes the connection, as
// Kafka's "Unexpected Kafka request of type X during SASL handshake". A
// failed authentication is answered with SASL_AUTHENTICATION_FAILED and
// Kafka's message after connection.failed.authentication.delay.ms, then the
// connection closes; the broker serves everyone else on.
//
// # Where settings come from
//
// Every key is looked up per listener as Kafka's valuesWithPrefixOverride
// does: listener.name.<lower-case listener>.<key> wins over <key>. SASL
// keys are per mechanism too: listener.name.<l>.<mechanism>.<key>
// (sasl.jaas.config, sasl.server.callback.handler.class,
// connections.max.reauth.ms). As in Kafka, a server's JAAS entry is the
// mechanism-prefixed listener.name.<l>.<mechanism>.sasl.jaas.config or a
// section <l>.KafkaServer / KafkaServer of the JAAS file that KAFKA_OPTS
// names (-Djava.security.auth.login.config); the unprefixed
// sasl.jaas.config is a client setting and is ignored on the server.
//
// # TLS (tls.go)
//
// Keystores are PEM (a file with key and chain, or inline
// ssl.keystore.key / ssl.keystore.certificate.chain; the key PKCS#8,
// encrypted with ssl.key.password or not), PKCS12 (go-pkcs12) or JKS
// (keystore-go); truststores likewise (PEM file or ssl.truststore.certificates
// inline). ssl.enabled.protocols and ssl.protocol bound the TLS versions,
// ssl.cipher.suites maps Java's (IANA) names to Go's, ssl.client.auth is
// none / requested / required (on SASL_SSL only when listener-prefixed, as
// ChannelBuilders does). The node's own connections to an SSL or SASL_SSL
// listener verify the server with the listener's truststore and, with
// ssl.endpoint.identification.algorithm=https (the default), its host name,
// and present the listener's keystore as client certificate.
// Listener.Reload swaps the keystore for new connections when a dynamic
// listener.name.<l>.ssl.* broker config changes, refusing a certificate
// with another subject (ssl.allow.dn.changes) or other SANs
// (ssl.allow.san.changes) as SslFactory does.
//
// # SASL (plain.go, scram.go, oauth.go)
//
//   - PLAIN: the user_<name>="<password>" options of the listener's
//     PlainLoginModule (PlainServerCallbackHandler), compared in constant
//     time.
//   - SCRAM-SHA-256/512: RFC 5802/7677 as ScramSaslServer, credentials from
//     the metadata log's UserScramCredentialRecords (written by
//     AlterUserScramCredentials through the controller, or by
//     format --add-scram); a fresh server nonce per exchange that the
//     client-final must end with (so a replayed client-final fails),
//     4096..16384 iterations, delegation tokens (tokenauth) refused.
//   - OAUTHBEARER: JWTValidator (BrokerJwtValidator) when
//     listener.name.<l>.oauthbearer.sasl.server.callback.handler.class is
//     OAuthBearerValidatorCallbackHandler: a signed JWT (never "none" or
//     HMAC) verified with a key of the JWKS at
//     sasl.oauthbearer.jwks.endpoint.url (file:// or https://, refreshed
//     every sasl.oauthbearer.jwks.endpoint.refresh.ms and when a token names
//     an unknown kid), with exp and iat, the expected audience and issuer
//     when configured, within sasl.oauthbearer.clock.skew.seconds, and the
//     sasl.oauthbearer.sub.claim.name claim as the principal. It fails
//     closed: no key, no login. The unsecured validator (unsigned tokens,
//     Kafka's OAuthBearerUnsecuredValidatorCallbackHandler) runs only when
//     that class is named or the JAAS entry has its unsecuredLogin* /
//     unsecuredValidator* options; Kafka falls back to it when no handler
//     is configured, kgo-broker refuses to start instead.
//
// Re-authentication (KIP-368): with connections.max.reauth.ms, or a token
// that expires, SaslAuthenticate v1+ tells the client its session lifetime;
// a SaslHandshake on the authenticated connection starts a
// re-authentication with the same mechanism that must yield the same
// principal, and a connection whose session ended is closed at its next
// other request, as Kafka's SocketServer does.
//
// # Principals
//
// DefaultKafkaPrincipalBuilder only: User:ANONYMOUS on PLAINTEXT and on SSL
// without a client certificate, User:<mapped subject> on SSL with one
// (SubjectDN prints it as Java's X500Principal.getName does; PrincipalMapper
// applies ssl.principal.mapping.rules), User:<authorization id> on SASL.
// The principal is on every protocol.Request; forwarded requests carry it
// to the controller in the Envelope as DefaultPrincipalData.
//
// Locks: JWTValidator.mu is a leaf guarding the key set; it is never held
// while fetching the JWKS. Listener's TLS config is an atomic pointer.
package security
