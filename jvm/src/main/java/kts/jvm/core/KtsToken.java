package kts.jvm.core;

import java.util.Base64;
import java.util.Objects;

/** A delegation token as kts issues it: the pair a Kafka client logs in with, and its times (ms since epoch). */
public final class KtsToken {
    private final String tokenId;
    private final String hmac;
    private final String owner;
    private final long issueTimestamp;
    private final long expiryTimestamp;
    private final long maxTimestamp;

    /** {@code hmac} is standard base64; {@code owner} may be null, and {@code issueTimestamp} 0, when unknown. */
    public KtsToken(String tokenId, String hmac, String owner, long issueTimestamp, long expiryTimestamp,
            long maxTimestamp) {
        this.tokenId = Objects.requireNonNull(tokenId, "tokenId");
        this.hmac = Objects.requireNonNull(hmac, "hmac");
        this.owner = owner;
        this.issueTimestamp = issueTimestamp;
        this.expiryTimestamp = expiryTimestamp;
        this.maxTimestamp = maxTimestamp;
    }

    public String tokenId() {
        return tokenId;
    }

    /** The HMAC as standard base64: the SCRAM password of the token. */
    public String hmac() {
        return hmac;
    }

    public String owner() {
        return owner;
    }

    public long issueTimestamp() {
        return issueTimestamp;
    }

    public long expiryTimestamp() {
        return expiryTimestamp;
    }

    public long maxTimestamp() {
        return maxTimestamp;
    }

    /**
     * The HMAC's raw bytes (base64-decoded). A Kafka client logs in with the base64 text, and Spark keeps that
     * text's bytes as a token's password ({@code hmac().getBytes(UTF_8)}), not these.
     */
    public byte[] hmacBytes() {
        return Base64.getDecoder().decode(hmac);
    }

    /** The same token with a new expiry (after a renewal). */
    public KtsToken withExpiry(long newExpiryTimestamp) {
        return new KtsToken(tokenId, hmac, owner, issueTimestamp, newExpiryTimestamp, maxTimestamp);
    }

    @Override
    public boolean equals(Object other) {
        if (this == other) {
            return true;
        }
        if (!(other instanceof KtsToken that)) {
            return false;
        }
        return tokenId.equals(that.tokenId) && hmac.equals(that.hmac) && expiryTimestamp == that.expiryTimestamp;
    }

    @Override
    public int hashCode() {
        return Objects.hash(tokenId, hmac, expiryTimestamp);
    }

    /** Never the HMAC (as Kafka's own DelegationToken.toString). */
    @Override
    public String toString() {
        return "KtsToken{tokenId=" + tokenId + ", hmac=[hidden], owner=" + owner + ", issueTimestamp="
                + issueTimestamp + ", expiryTimestamp=" + expiryTimestamp + ", maxTimestamp=" + maxTimestamp + "}";
    }
}
