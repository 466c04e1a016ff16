// The peer of crates/zarr-array/tests/n5_lz4_java.rs: lz4-java's block stream, as the Java
// N5 library writes and reads an `lz4` dataset's blocks.
//
//   java -cp lz4-java.jar:. Lz4BlockPeer encode BLOCK_SIZE IN OUT [IN OUT ...]
//   java -cp lz4-java.jar:. Lz4BlockPeer decode IN OUT [IN OUT ...]

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Paths;

import net.jpountz.lz4.LZ4BlockInputStream;
import net.jpountz.lz4.LZ4BlockOutputStream;

public class Lz4BlockPeer {
    public static void main(String[] args) throws IOException {
        if (args.length > 0 && args[0].equals("encode")) {
            int blockSize = Integer.parseInt(args[1]);
            for (int i = 2; i + 1 < args.length; i += 2) {
                byte[] data = Files.readAllBytes(Paths.get(args[i]));
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                // As N5's Lz4Compression: a stream of the dataset's block size, finished.
                LZ4BlockOutputStream stream = new LZ4BlockOutputStream(out, blockSize);
                stream.write(data);
                stream.finish();
                Files.write(Paths.get(args[i + 1]), out.toByteArray());
            }
        } else if (args.length > 0 && args[0].equals("decode")) {
            for (int i = 1; i + 1 < args.length; i += 2) {
                byte[] data = Files.readAllBytes(Paths.get(args[i]));
                try (InputStream in = new LZ4BlockInputStream(new ByteArrayInputStream(data))) {
                    Files.write(Paths.get(args[i + 1]), in.readAllBytes());
                }
            }
        } else {
            System.err.println("usage: Lz4BlockPeer encode BLOCK_SIZE IN OUT ... | decode IN OUT ...");
            System.exit(2);
        }
    }
}
