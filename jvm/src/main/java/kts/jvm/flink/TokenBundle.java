package kts.jvm.flink;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import kts.jvm.core.KtsToken;

/**
 * The bytes the JobManager's provider hands to Flink and every TaskManager's receiver gets back: each cluster's
 * current token, by cluster id. A versioned format of its own (DataOutput, no Java serialization: the receiver
 * never instantiates classes named by the bytes). The bytes hold HMACs: Flink sends them over its RPC, which
 * {@code security.ssl.internal.enabled} encrypts.
 */
final class TokenBundle {
    private static final int VERSION = 1;
    private static final int MAX_CLUSTERS = 1024;

    private TokenBundle() {}

    static byte[] encode(Map<String, KtsToken> tokens) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(VERSION);
            out.writeInt(tokens.size());
            for (Map.Entry<String, KtsToken> entry : tokens.entrySet()) {
                KtsToken token = entry.getValue();
                out.writeUTF(entry.getKey());
                out.writeUTF(token.tokenId());
                out.writeUTF(token.hmac());
                out.writeBoolean(token.owner() != null); // kts may leave the owner out
                out.writeUTF(token.owner() == null ? "" : token.owner());
                out.writeLong(token.issueTimestamp());
                out.writeLong(token.expiryTimestamp());
                out.writeLong(token.maxTimestamp());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return bytes.toByteArray();
    }

    /** The tokens, by cluster id; IllegalArgumentException for bytes that are not a bundle (without the bytes). */
    static Map<String, KtsToken> decode(byte[] bytes) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            int version = in.readInt();
            if (version != VERSION) {
                throw new IllegalArgumentException("kts token bundle version " + version + ", this jar reads " + VERSION);
            }
            int count = in.readInt();
            if (count < 0 || count > MAX_CLUSTERS) {
                throw new IllegalArgumentException("kts token bundle with " + count + " clusters");
            }
            Map<String, KtsToken> tokens = new LinkedHashMap<>();
            for (int i = 0; i < count; i++) {
                String cluster = in.readUTF();
                String tokenId = in.readUTF();
                String hmac = in.readUTF();
                boolean hasOwner = in.readBoolean();
                String owner = in.readUTF();
                tokens.put(cluster, new KtsToken(tokenId, hmac, hasOwner ? owner : null, in.readLong(), in.readLong(),
                        in.readLong()));
            }
            if (in.available() != 0) {
                throw new IllegalArgumentException("kts token bundle with bytes after its last token");
            }
            return tokens;
        } catch (IOException e) {
            throw new IllegalArgumentException("kts token bundle cut short", e);
        }
    }
}
