// GuavaCompat drives Guava's BloomFilter for ohbloom's compatibility test
// (guava_test.go), which compiles and runs it against Debian's Guava.
//
//   java GuavaCompat create FUNNEL N P KEYS OUT QUERIES
//       builds BloomFilter.create(funnel, N, P), puts every line of KEYS,
//       writes it to OUT with writeTo, and prints 1 or 0 per line of
//       QUERIES: mightContain.
//   java GuavaCompat read FUNNEL IN QUERIES
//       reads a filter from IN with readFrom and prints mightContain per line
//       of QUERIES.
//
// FUNNEL is bytes (lines are hex), string (lines are UTF-8 text) or long
// (lines are signed decimal).
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnel;
import com.google.common.hash.Funnels;
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Function;

public class GuavaCompat {
  public static void main(String[] args) throws Exception {
    switch (args[1]) {
      case "bytes":
        run(args, Funnels.byteArrayFunnel(), s -> HexFormat.of().parseHex(s));
        break;
      case "string":
        run(args, Funnels.stringFunnel(StandardCharsets.UTF_8), s -> s);
        break;
      case "long":
        run(args, Funnels.longFunnel(), Long::parseLong);
        break;
      default:
        throw new IllegalArgumentException("funnel " + args[1]);
    }
  }

  static <T> void run(String[] args, Funnel<? super T> funnel, Function<String, T> parse) throws Exception {
    BloomFilter<T> filter;
    String queries;
    if (args[0].equals("create")) {
      filter = BloomFilter.create(funnel, Long.parseLong(args[2]), Double.parseDouble(args[3]));
      for (String line : lines(args[4])) {
        filter.put(parse.apply(line));
      }
      try (OutputStream out = new BufferedOutputStream(new FileOutputStream(args[5]))) {
        filter.writeTo(out);
      }
      queries = args[6];
    } else {
      try (InputStream in = new BufferedInputStream(new FileInputStream(args[2]))) {
        filter = BloomFilter.readFrom(in, funnel);
      }
      queries = args[3];
    }
    PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false);
    for (String line : lines(queries)) {
      out.println(filter.mightContain(parse.apply(line)) ? "1" : "0");
    }
    out.flush();
  }

  static List<String> lines(String path) throws IOException {
    return Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8);
  }
}
