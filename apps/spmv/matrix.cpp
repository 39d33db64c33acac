// spmv matrices: the parallel Matrix Market reader, the generators, and the
// row partitions.
#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "locus/collective.hpp"
#include "locus/datatype.hpp"
#include "locus/error.hpp"
#include "locus/hash.hpp"
#include "locus/wait.hpp"
#include "spmv.hpp"

namespace spmv {

using locus::mix64;

namespace {

// One entry on its way to the owner of its row. `order` is the entry's
// place in the file, so that duplicates are summed in file order whatever
// the rank count.
struct Triplet {
  gidx row, col;
  double val;
  gidx order;
};

int comm_size(MPI_Comm c) {
  int s = 1;
  MPI_Comm_size(c, &s);
  return s;
}
int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

int checked_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw locus::Error(std::string("spmv: ") + what +
                       ": more than 2^31 elements in one message; use more ranks");
  return static_cast<int>(n);
}

// MPI_Alltoallv of `send` grouped by destination (counts[d] elements for d).
template <class T>
std::vector<T> exchange(MPI_Comm comm, const std::vector<T>& send, const std::vector<std::size_t>& counts,
                        MPI_Datatype type, const char* what) {
  const int p = comm_size(comm);
  std::vector<int> sc(p), rc(p), sd(p), rd(p);
  std::size_t off = 0;
  for (int d = 0; d < p; ++d) {
    sc[d] = checked_count(counts[d], what);
    sd[d] = checked_count(off, what);
    off += counts[d];
  }
  locus::yielding::alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, comm);
  std::size_t total = 0;
  for (int d = 0; d < p; ++d) {
    rd[d] = checked_count(total, what);
    total += static_cast<std::size_t>(rc[d]);
  }
  std::vector<T> recv(total);
  locus::alltoallv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), type, comm);
  return recv;
}

std::vector<gidx> equal_rows(gidx n, int p) {
  std::vector<gidx> s(static_cast<std::size_t>(p) + 1);
  for (int r = 0; r <= p; ++r) s[r] = static_cast<gidx>(static_cast<__int128>(n) * r / p);
  return s;
}

// ---- Matrix Market text

std::string lower(std::string_view s) {
  std::string t(s);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t;
}

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> t;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) t.push_back(line.substr(i, j - i));
    i = j;
  }
  return t;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

std::string_view chomp(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::string shown(std::string_view t) {
  std::string s(t.substr(0, 40));
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) c = '?';
  return "'" + s + (t.size() > 40 ? "...'" : "'");
}

// One optional sign: "+1" is 1, "+-1" and "-+1" are not numbers (from_chars
// takes a '-' of its own, so a '+' is dropped only before a digit or '.').
bool drop_plus(std::string_view& t) {
  if (t.empty() || t.front() != '+') return true;
  t.remove_prefix(1);
  return !t.empty() && t.front() != '-' && t.front() != '+';
}

bool parse_int(std::string_view t, gidx& v) {
  if (!drop_plus(t)) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && p == t.data() + t.size();
}

bool parse_real(std::string_view t, double& v) {
  if (!drop_plus(t)) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) {  // overflow: +-inf, as strtod does
    v = std::strtod(std::string(t).c_str(), nullptr);
    return true;
  }
  return ec == std::errc() && p == t.data() + t.size();
}

// Calls fn(line, index) for every line that starts in [begin, end) of the
// file (index counts from 0 within the range); reads in 8 MiB pieces, so
// memory does not grow with the range.
template <class Fn>
void for_lines(std::FILE* f, long long begin, long long end, long long file_size, bool first_range, Fn fn) {
  long long pos = begin;
  if (!first_range && begin > 0 && begin < file_size) {
    // A line that starts before `begin` belongs to the previous range.
    if (std::fseek(f, static_cast<long>(begin - 1), SEEK_SET) != 0) throw locus::Error("seek failed");
    int c = std::fgetc(f);
    pos = begin;
    while (c != '\n' && c != EOF) {
      c = std::fgetc(f);
      ++pos;
    }
    if (c == EOF) return;
    // pos is now the byte after the newline... when c was the byte at begin-1
    // (a newline), pos == begin and the loop did not run.
  } else if (std::fseek(f, static_cast<long>(begin), SEEK_SET) != 0) {
    throw locus::Error("seek failed");
  }
  if (pos >= end) return;
  const std::size_t chunk = std::size_t(8) << 20;
  std::vector<char> buf;
  std::string carry;
  long long line_start = pos, index = 0;
  bool done = false;
  while (!done) {
    buf.resize(chunk);
    const std::size_t got = std::fread(buf.data(), 1, chunk, f);
    if (got == 0) break;
    std::size_t i = 0;
    while (i < got) {
      const char* nl = static_cast<const char*>(std::memchr(buf.data() + i, '\n', got - i));
      if (!nl) {
        carry.append(buf.data() + i, got - i);
        break;
      }
      const std::size_t len = static_cast<std::size_t>(nl - (buf.data() + i));
      if (carry.empty()) {
        fn(chomp(std::string_view(buf.data() + i, len)), index++);
      } else {
        carry.append(buf.data() + i, len);
        fn(chomp(std::string_view(carry)), index++);
        carry.clear();
      }
      i += len + 1;
      line_start = pos + static_cast<long long>(i);
      if (line_start >= end) {
        done = true;
        break;
      }
    }
    pos += static_cast<long long>(got);
  }
  if (!done && !carry.empty()) fn(chomp(std::string_view(carry)), index++);  // last line, no newline
  (void)line_start;
}

struct Header {
  std::string format, field, symmetry;
  gidx m = 0, n = 0, nnz = 0;
  long long data_begin = 0;  // byte after the size line
  long long file_size = 0;
  gidx lines = 0;  // lines up to and including the size line
};

// Header lines, each read whole however long: runs of blanks are kept as
// one blank (a header line is words between blanks), and a line with more
// than kMax other bytes is marked too long (`overlong`), not cut.
struct HeaderLines {
  static constexpr std::size_t kMax = 1 << 16;
  std::FILE* f = nullptr;
  long long consumed = 0;
  bool overlong = false;

  bool next(std::string& out) {
    out.clear();
    overlong = false;
    int c;
    bool any = false;
    while ((c = std::fgetc(f)) != EOF) {
      any = true;
      ++consumed;
      if (c == '\n') break;
      const bool space = c == ' ' || c == '\t';
      if (space && !out.empty() && (out.back() == ' ' || out.back() == '\t')) continue;
      if (out.size() < kMax)
        out.push_back(static_cast<char>(c));
      else
        overlong = true;
    }
    if (!out.empty() && out.back() == '\r') out.pop_back();
    return any;
  }
};

// The banner's format, field and symmetry into H. Returns "" or what is
// wrong with it.
std::string parse_banner(const std::string& line, Header& h) {
  auto t = tokens(line);
  if (t.empty() || lower(t[0]) != "%%matrixmarket")
    return "not a Matrix Market file: the first line must start with %%MatrixMarket (got " + shown(line) +
           ")";
  if (t.size() != 5 || lower(t[1]) != "matrix")
    return "banner must be '%%MatrixMarket matrix FORMAT FIELD SYMMETRY' (got " + shown(line) + ")";
  std::string err;
  h.format = lower(t[2]);
  h.field = lower(t[3]);
  h.symmetry = lower(t[4]);
  if (h.format != "coordinate" && h.format != "array")
    err = "format " + shown(t[2]) + " is not coordinate or array";
  else if (h.field == "complex")
    err = "complex matrices are not supported (real, integer or pattern)";
  else if (h.field != "real" && h.field != "integer" && h.field != "pattern" && h.field != "double")
    err = "field " + shown(t[3]) + " is not real, integer or pattern";
  else if (h.symmetry == "hermitian")
    err = "hermitian matrices are not supported (general, symmetric, skew-symmetric)";
  else if (h.symmetry != "general" && h.symmetry != "symmetric" && h.symmetry != "skew-symmetric")
    err = "symmetry " + shown(t[4]) + " is not general, symmetric or skew-symmetric";
  else if (h.format == "array" && (h.field == "pattern" || h.symmetry != "general"))
    err = "array matrices are supported as 'array real general' (or integer) only";
  if (h.field == "double") h.field = "real";
  return err;
}

// The size line ('ROWS COLUMNS ENTRIES', or 'ROWS COLUMNS' for array) into
// H. Returns "" or what is wrong with it.
std::string parse_size(const std::string& line, Header& h) {
  auto t = tokens(line);
  const std::size_t want = h.format == "array" ? 2 : 3;
  gidx v[3] = {0, 0, 0};
  bool ok = t.size() == want;
  for (std::size_t i = 0; ok && i < want; ++i) ok = parse_int(t[i], v[i]) && v[i] >= 0;
  if (!ok)
    return "size line must be " +
           std::string(h.format == "array" ? "'ROWS COLUMNS'" : "'ROWS COLUMNS ENTRIES'") +
           " with non-negative integers (got " + shown(line) + ")";
  h.m = v[0];
  h.n = v[1];
  h.nnz = h.format == "array" ? 0 : v[2];
  if (h.m != h.n)
    return "the matrix is " + std::to_string(h.m) + " x " + std::to_string(h.n) +
           "; spmv needs a square matrix";
  if (h.n == 0) return "the matrix has no rows";
  if (h.format == "array") {
    if (h.n > gidx(3037000499)) return "array matrix too large";
    h.nnz = h.n * h.n;
  } else if (h.symmetry != "general" && h.nnz > h.n + (h.n * (h.n - 1)) / 2 && h.n < gidx(3037000499)) {
    return std::to_string(h.nnz) + " entries announced, but a " + h.symmetry + " " + std::to_string(h.n) +
           " x " + std::to_string(h.n) + " matrix stores at most " +
           std::to_string(h.n + (h.n * (h.n - 1)) / 2);
  }
  return "";
}

// Rank 0: the banner, comments and the size line. Returns "" or the error.
std::string read_header(const std::string& path, Header& h) {
  // stat before open: opening a FIFO would block
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return path + ": cannot open (" + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode))
    return path + ": not a regular file (" +
           (S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket") +
           "); spmv.matrix.file must name a Matrix Market file";
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return path + ": cannot open (" + std::strerror(errno) + ")";
  h.file_size = st.st_size;
  HeaderLines in{f};
  std::string line;
  const std::string too_long =
      "line longer than " + std::to_string(HeaderLines::kMax) + " bytes (besides blanks)";
  std::string err;
  auto at = [&](gidx l) { return path + ":" + std::to_string(l) + ": "; };
  if (!in.next(line)) {
    err = at(1) + "empty file (expected a '%%MatrixMarket matrix ...' banner)";
  } else if (in.overlong) {
    err = at(1) + "banner " + too_long;
  } else {
    h.lines = 1;
    const std::string problem = parse_banner(line, h);
    if (!problem.empty()) err = at(1) + problem;
  }
  if (err.empty()) {
    // comments and blank lines, then the size line
    bool found = false;
    while (in.next(line)) {
      ++h.lines;
      if (!line.empty() && line[0] == '%') continue;
      if (blank(line)) continue;
      found = true;
      break;
    }
    if (!found) {
      err = at(h.lines + 1) + "missing size line (" +
            std::string(h.format == "array" ? "'ROWS COLUMNS'" : "'ROWS COLUMNS ENTRIES'") +
            ") after the banner";
    } else if (in.overlong) {
      err = at(h.lines) + "size " + too_long;
    } else {
      const std::string problem = parse_size(line, h);
      if (!problem.empty()) err = at(h.lines) + problem;
    }
  }
  h.data_begin = in.consumed;
  std::fclose(f);
  return err;
}

// The first error a rank found, reported collectively: every rank throws
// the one of the lowest line (ranks hold ascending ranges of lines).
struct FirstError {
  gidx line = -1;
  std::string text;
  void set(gidx l, std::string t) {
    if (line < 0) {
      line = l;
      text = std::move(t);
    }
  }
};

void raise_first(MPI_Comm comm, const FirstError& e) {
  long long mine = e.line < 0 ? LLONG_MAX : e.line, least = 0;
  locus::yielding::allreduce(&mine, &least, 1, MPI_LONG_LONG, MPI_MIN, comm);
  if (least == LLONG_MAX) return;
  int cand = mine == least ? comm_rank(comm) : INT_MAX, who = 0;
  locus::yielding::allreduce(&cand, &who, 1, MPI_INT, MPI_MIN, comm);
  std::string text = e.text;
  int len = static_cast<int>(text.size());
  locus::yielding::bcast(&len, 1, MPI_INT, who, comm);
  text.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(text.data(), len, MPI_CHAR, who, comm);
  throw locus::CollectiveError(text);
}

// Sorts triplets by (row, col, order) and sums duplicates into CSR.
RowBlock assemble(std::vector<Triplet>& t, gidx n, gidx first, gidx rows) {
  std::sort(t.begin(), t.end(), [](const Triplet& a, const Triplet& b) {
    if (a.row != b.row) return a.row < b.row;
    if (a.col != b.col) return a.col < b.col;
    return a.order < b.order;
  });
  RowBlock b;
  b.n = n;
  b.first = first;
  b.ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  b.col.reserve(t.size());
  b.val.reserve(t.size());
  gidx prev_row = -1, prev_col = -1;
  for (const Triplet& e : t) {
    if (e.row == prev_row && e.col == prev_col) {
      b.val.back() += e.val;  // duplicate: summed in file order
      continue;
    }
    b.col.push_back(e.col);
    b.val.push_back(e.val);
    ++b.ptr[static_cast<std::size_t>(e.row - first) + 1];
    prev_row = e.row;
    prev_col = e.col;
  }
  for (std::size_t i = 1; i < b.ptr.size(); ++i) b.ptr[i] += b.ptr[i - 1];
  return b;
}

// Sends every triplet to the owner of its row in an equal-row partition
// and assembles the rows there.
RowBlock to_rows(MPI_Comm comm, std::vector<Triplet>& mine, gidx n) {
  const int p = comm_size(comm), me = comm_rank(comm);
  const std::vector<gidx> starts = equal_rows(n, p);
  std::vector<std::size_t> counts(static_cast<std::size_t>(p), 0);
  for (const Triplet& e : mine) ++counts[static_cast<std::size_t>(owner_of(starts, e.row))];
  std::stable_sort(mine.begin(), mine.end(), [&](const Triplet& a, const Triplet& b) {
    return owner_of(starts, a.row) < owner_of(starts, b.row);
  });
  MPI_Datatype raw;
  MPI_Type_contiguous(sizeof(Triplet), MPI_BYTE, &raw);
  const locus::Datatype type(raw);
  std::vector<Triplet> got = exchange(comm, mine, counts, type.get(), "matrix entries");
  mine.clear();
  mine.shrink_to_fit();
  return assemble(got, n, starts[me], starts[me + 1] - starts[me]);
}

// Rank 0 reads the header; every rank gets it (or its error).
Header broadcast_header(MPI_Comm comm, const std::string& path) {
  const int me = comm_rank(comm);
  Header h;
  std::string err;
  if (me == 0) err = read_header(path, h);
  {
    FirstError e;
    if (!err.empty()) e.set(1, err);
    raise_first(comm, e);
  }
  long long hv[5] = {h.m, h.nnz, h.data_begin, h.file_size, h.lines};
  locus::yielding::bcast(hv, 5, MPI_LONG_LONG, 0, comm);
  h.n = h.m = hv[0];
  h.nnz = hv[1];
  h.data_begin = hv[2];
  h.file_size = hv[3];
  h.lines = hv[4];
  char kinds[3][16] = {};
  if (me == 0) {
    std::snprintf(kinds[0], 16, "%s", h.format.c_str());
    std::snprintf(kinds[1], 16, "%s", h.field.c_str());
    std::snprintf(kinds[2], 16, "%s", h.symmetry.c_str());
  }
  locus::yielding::bcast(kinds, sizeof kinds, MPI_CHAR, 0, comm);
  h.format = kinds[0];
  h.field = kinds[1];
  h.symmetry = kinds[2];
  return h;
}

// The kind of data lines the header announces.
struct DataKind {
  bool coordinate, pattern, integer, sym, skew;
  std::string want;  // a data line's words
  explicit DataKind(const Header& h)
      : coordinate(h.format == "coordinate"),
        pattern(h.field == "pattern"),
        integer(h.field == "integer"),
        sym(h.symmetry == "symmetric"),
        skew(h.symmetry == "skew-symmetric"),
        want(coordinate ? (pattern ? "ROW COLUMN" : "ROW COLUMN VALUE") : "VALUE") {}
};

// A data line's row and column (0-based) into I, J. Returns "" or the error.
std::string entry_position(const Header& h, const DataKind& d, const std::vector<std::string_view>& t, gidx k,
                           gidx& i, gidx& j) {
  if (!d.coordinate) {
    i = k % h.n;
    j = k / h.n;
    return "";
  }
  if (!parse_int(t[0], i) || !parse_int(t[1], j))
    return "row and column must be integers (got " + shown(t[0]) + " " + shown(t[1]) + ")";
  if (i < 1 || i > h.n || j < 1 || j > h.n)
    return "index (" + std::to_string(i) + ", " + std::to_string(j) + ") out of range 1.." +
           std::to_string(h.n);
  --i;
  --j;
  return "";
}

// A data line's value word VT into V. Returns "" or the error.
std::string entry_value(const DataKind& d, const ReadOptions& opt, std::string_view vt, double& v) {
  if (d.integer) {
    gidx iv = 0;
    if (!parse_int(vt, iv)) return "value " + shown(vt) + " is not an integer (field integer)";
    v = static_cast<double>(iv);
  } else if (!parse_real(vt, v)) {
    return "value " + shown(vt) + " is not a number";
  }
  if (!std::isfinite(v) && !opt.allow_nonfinite)
    return "value " + shown(vt) + " is not finite (set spmv.matrix.allow_nonfinite: true to accept it)";
  return "";
}

// Parses data line LINE, entry K (0-based), into MINE (and its mirror for
// a symmetric file). Returns "" or the error, without the file:line.
std::string parse_entry(const Header& h, const DataKind& d, const ReadOptions& opt, std::string_view line,
                        gidx k, std::vector<Triplet>& mine) {
  if (k >= h.nnz)
    return "more entries than the " + std::to_string(h.nnz) + " announced on line " + std::to_string(h.lines);
  auto t = tokens(line);
  const std::size_t nt = d.coordinate ? (d.pattern ? 2 : 3) : 1;
  if (t.size() < nt)
    return "expected '" + d.want + "', got " + shown(line) + " (entry " + std::to_string(k + 1) + ")";
  if (t.size() > nt) return "unexpected " + shown(t[nt]) + " after '" + d.want + "'";
  gidx i = 0, j = 0;
  double v = 1.0;
  std::string err = entry_position(h, d, t, k, i, j);
  if (!err.empty()) return err;
  const std::string_view vt = d.coordinate ? (d.pattern ? std::string_view() : t[2]) : t[0];
  if (!vt.empty()) {
    err = entry_value(d, opt, vt, v);
    if (!err.empty()) return err;
  }
  if ((d.sym || d.skew) && j > i)
    return "entry (" + std::to_string(i + 1) + ", " + std::to_string(j + 1) + ") is above the diagonal; a " +
           h.symmetry + " file stores the lower triangle only";
  if (d.skew && i == j)
    return "entry (" + std::to_string(i + 1) + ", " + std::to_string(j + 1) +
           ") is on the diagonal, which a skew-symmetric file does not store";
  mine.push_back({i, j, v, k});
  if ((d.sym || d.skew) && i != j) mine.push_back({j, i, d.skew ? -v : v, k});
  return "";
}

// Lines and data lines: of the ranks before me (`before`) and of the whole
// data section (`total`), for global line numbers and entry indices.
struct LineCounts {
  long long before[2] = {0, 0}, total[2] = {0, 0};  // lines, data lines
  gidx data_mine = 0;
};

// Pass 1 over my byte range [BEGIN, END): lines and data lines.
LineCounts count_lines(MPI_Comm comm, std::FILE* f, long long begin, long long end, const Header& h) {
  const int me = comm_rank(comm);
  gidx nlines = 0, ndata = 0;
  for_lines(f, begin, end, h.file_size, me == 0, [&](std::string_view line, long long) {
    ++nlines;
    if (!blank(line) && line[0] != '%') ++ndata;
  });
  LineCounts c;
  c.data_mine = ndata;
  long long counts[2] = {nlines, ndata};
  locus::exscan_sum(comm, counts, c.before, 2);
  locus::yielding::allreduce(counts, c.total, 2, MPI_LONG_LONG, MPI_SUM, comm);
  return c;
}

// Pass 2 over my byte range: the entries, or the first error (by line)
// of any rank, thrown on every rank. Closes F.
std::vector<Triplet> parse_range(MPI_Comm comm, std::FILE* f, long long begin, long long end, const Header& h,
                                 const LineCounts& n, const ReadOptions& opt, const std::string& path) {
  const int p = comm_size(comm), me = comm_rank(comm);
  const DataKind d(h);
  std::vector<Triplet> mine;
  mine.reserve(static_cast<std::size_t>(n.data_mine) * (d.sym || d.skew ? 2 : 1));
  FirstError e;
  gidx entry = n.before[1];
  for_lines(f, begin, end, h.file_size, me == 0, [&](std::string_view line, long long index) {
    if (e.line >= 0) return;
    if (blank(line) || line[0] == '%') return;
    const gidx lno = h.lines + n.before[0] + index + 1;
    const std::string problem = parse_entry(h, d, opt, line, entry++, mine);
    if (!problem.empty()) e.set(lno, path + ":" + std::to_string(lno) + ": " + problem);
  });
  std::fclose(f);
  if (e.line < 0 && me == p - 1 && n.total[1] < h.nnz)
    e.set(h.lines + n.total[0] + 1, path + ":" + std::to_string(std::max<gidx>(h.lines + n.total[0], 1)) +
                                        ": the file ends after " + std::to_string(n.total[1]) + " of the " +
                                        std::to_string(h.nnz) + " entries announced on line " +
                                        std::to_string(h.lines));
  raise_first(comm, e);
  return mine;
}

}  // namespace

RowBlock read_matrix_market(MPI_Comm comm, const std::string& path, const ReadOptions& opt,
                            MatrixInfo& info) {
  const double t0 = MPI_Wtime();
  const int p = comm_size(comm), me = comm_rank(comm);
  const Header h = broadcast_header(comm, path);

  // (a line holds at least 2 bytes per entry, so a file cannot carry more
  // entries than half its size, whatever its size line claims)
  if (opt.before_entries)
    opt.before_entries(h.n, std::min<gidx>(h.nnz, (h.file_size - h.data_begin) / 2 + 1),
                       h.symmetry != "general");

  // My byte range of the data section.
  const long long span = h.file_size - h.data_begin;
  const long long begin = h.data_begin + static_cast<long long>(static_cast<__int128>(span) * me / p);
  const long long end = h.data_begin + static_cast<long long>(static_cast<__int128>(span) * (me + 1) / p);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  {
    FirstError e;
    if (!f)
      e.set(1, path + ": cannot open on rank " + std::to_string(me) + " (" + std::strerror(errno) + ")");
    raise_first(comm, e);
  }
  const LineCounts counts = count_lines(comm, f, begin, end, h);
  std::vector<Triplet> mine = parse_range(comm, f, begin, end, h, counts, opt, path);

  RowBlock rows = to_rows(comm, mine, h.n);
  info.source = path;
  info.format = h.format;
  info.field = h.field;
  info.symmetry = h.symmetry;
  info.entries = h.nnz;
  info.symmetric = h.symmetry == "symmetric";
  info.file_bytes = static_cast<double>(h.file_size);
  locus::yielding::barrier(comm);
  info.load_seconds = MPI_Wtime() - t0;
  return rows;
}

// ---- generators

namespace {

void stencil_row(const GeneratorSpec& g, gidx row, std::vector<gidx>& cols, std::vector<double>& vals) {
  const gidx nx = g.nx, ny = g.ny, nz = g.kind == "laplace2d" ? 1 : g.nz;
  const gidx x = row % nx, y = (row / nx) % ny, z = row / (nx * ny);
  const bool full = g.kind == "hpcg27";
  const double diag = g.kind == "laplace2d" ? 4.0 : (full ? 26.0 : 6.0);
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        const int manhattan = std::abs(dx) + std::abs(dy) + std::abs(dz);
        if (!full && manhattan > 1) continue;
        if (g.kind == "laplace2d" && dz != 0) continue;
        const gidx xx = x + dx, yy = y + dy, zz = z + dz;
        if (xx < 0 || xx >= nx || yy < 0 || yy >= ny || zz < 0 || zz >= nz) continue;
        cols.push_back(xx + nx * (yy + ny * zz));
        vals.push_back(manhattan == 0 ? diag : -1.0);
      }
}

void banded_row(const GeneratorSpec& g, gidx row, std::vector<gidx>& cols, std::vector<double>& vals) {
  const gidx lo = std::max<gidx>(0, row - g.bandwidth), hi = std::min<gidx>(g.n - 1, row + g.bandwidth);
  const gidx slots = hi - lo;  // off-diagonal candidates
  const gidx want = std::min<gidx>(g.per_row - 1, slots);
  std::vector<gidx> picked;
  if (want == slots) {
    for (gidx c = lo; c <= hi; ++c)
      if (c != row) picked.push_back(c);
  } else {
    // rejection sampling on a per-row stream; want <= slots, and when more
    // than half the slots are wanted, pick the ones to leave out instead
    const bool leave_out = want > slots / 2;
    const gidx draws = leave_out ? slots - want : want;
    std::vector<gidx> chosen;
    std::uint64_t stream = mix64(g.seed ^ mix64(static_cast<std::uint64_t>(row)));
    while (static_cast<gidx>(chosen.size()) < draws) {
      stream = mix64(stream);
      gidx c = lo + static_cast<gidx>(stream % static_cast<std::uint64_t>(slots));
      if (c >= row) ++c;  // skip the diagonal
      if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);
    }
    if (leave_out) {
      for (gidx c = lo; c <= hi; ++c)
        if (c != row && std::find(chosen.begin(), chosen.end(), c) == chosen.end()) picked.push_back(c);
    } else {
      picked = chosen;
    }
  }
  picked.push_back(row);
  std::sort(picked.begin(), picked.end());
  double off_sum = 0;
  std::vector<double> v(picked.size());
  for (std::size_t k = 0; k < picked.size(); ++k) {
    if (picked[k] == row) continue;
    // off-diagonal values in [-1, 1), multiples of 1/1024 (exact in sums)
    const std::uint64_t h =
        mix64(g.seed * 0x2545f4914f6cdd1dULL ^
              mix64(static_cast<std::uint64_t>(row) << 20 ^ static_cast<std::uint64_t>(picked[k])));
    v[k] = static_cast<double>(static_cast<std::int64_t>(h % 2048) - 1024) / 1024.0;
    off_sum += std::fabs(v[k]);
  }
  for (std::size_t k = 0; k < picked.size(); ++k) {
    if (picked[k] == row) v[k] = 1.0 + off_sum;
    cols.push_back(picked[k]);
    vals.push_back(v[k]);
  }
}

}  // namespace

double hash_uniform(std::uint64_t seed, std::uint64_t index) {
  return static_cast<double>(mix64(mix64(seed) ^ index) >> 11) * 0x1.0p-53;
}

RowBlock generate(MPI_Comm comm, const GeneratorSpec& g, MatrixInfo& info) {
  const double t0 = MPI_Wtime();
  const int p = comm_size(comm), me = comm_rank(comm);
  gidx n = 0;
  char desc[200];
  if (g.kind == "banded") {
    n = g.n;
    std::snprintf(desc, sizeof desc, "banded %lld rows, bandwidth %lld, %lld nonzeros per row, seed %llu",
                  static_cast<long long>(g.n), static_cast<long long>(g.bandwidth),
                  static_cast<long long>(g.per_row), static_cast<unsigned long long>(g.seed));
  } else if (g.kind == "laplace2d") {
    n = g.nx * g.ny;
    std::snprintf(desc, sizeof desc, "laplace2d %lld x %lld (5-point)", static_cast<long long>(g.nx),
                  static_cast<long long>(g.ny));
  } else {
    n = g.nx * g.ny * g.nz;
    std::snprintf(desc, sizeof desc, "%s %lld x %lld x %lld (%s)", g.kind.c_str(),
                  static_cast<long long>(g.nx), static_cast<long long>(g.ny), static_cast<long long>(g.nz),
                  g.kind == "hpcg27" ? "HPCG 27-point" : "7-point");
  }
  const std::vector<gidx> starts = equal_rows(n, p);
  RowBlock b;
  b.n = n;
  b.first = starts[me];
  const gidx rows = starts[me + 1] - starts[me];
  b.ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (gidx r = 0; r < rows; ++r) {
    if (g.kind == "banded")
      banded_row(g, b.first + r, b.col, b.val);
    else
      stencil_row(g, b.first + r, b.col, b.val);
    b.ptr[static_cast<std::size_t>(r) + 1] = b.nnz();
  }
  info.source = desc;
  info.format = "generator";
  info.field = "real";
  info.symmetry = g.kind == "banded" ? "general" : "symmetric";
  info.symmetric = g.kind != "banded";
  long long local = b.nnz(), total = 0;
  locus::yielding::allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  info.entries = total;
  locus::yielding::barrier(comm);
  info.load_seconds = MPI_Wtime() - t0;
  return b;
}

// ---- partitions

int owner_of(const std::vector<gidx>& starts, gidx row) {
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), row) - starts.begin()) - 1;
}

std::vector<gidx> partition(MPI_Comm comm, const RowBlock& rows, bool by_nonzeros) {
  const int p = comm_size(comm);
  if (!by_nonzeros) return equal_rows(rows.n, p);
  long long local = rows.nnz(), before = 0, total = 0;
  locus::exscan_sum(comm, &local, &before, 1);
  locus::yielding::allreduce(&local, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  // start of rank k: the first row whose preceding nonzeros reach k*total/p
  std::vector<long long> cand(static_cast<std::size_t>(p) + 1, rows.n), starts(cand.size());
  for (int k = 1; k < p; ++k) {
    const long long target = static_cast<long long>(static_cast<__int128>(total) * k / p);
    // prefix(first + r) = before + ptr[r]; smallest r in [0, rows) with prefix >= target
    if (rows.rows() == 0 || before + rows.ptr[rows.rows() - 1] < target) continue;
    auto it = std::lower_bound(rows.ptr.begin(), rows.ptr.end() - 1, target - before);
    cand[k] = rows.first + (it - rows.ptr.begin());
  }
  locus::yielding::allreduce(cand.data(), starts.data(), p + 1, MPI_LONG_LONG, MPI_MIN, comm);
  starts[0] = 0;
  starts[p] = rows.n;
  for (int k = 1; k <= p; ++k) starts[k] = std::max(starts[k], starts[k - 1]);
  return std::vector<gidx>(starts.begin(), starts.end());
}

RowBlock redistribute(MPI_Comm comm, const RowBlock& rows, const std::vector<gidx>& starts) {
  const int p = comm_size(comm), me = comm_rank(comm);
  std::vector<std::size_t> nrows(p, 0), nnz(p, 0);
  std::vector<gidx> lens(static_cast<std::size_t>(rows.rows()));
  for (gidx r = 0; r < rows.rows(); ++r) {
    const int d = owner_of(starts, rows.first + r);
    lens[r] = rows.ptr[r + 1] - rows.ptr[r];
    ++nrows[d];
    nnz[d] += static_cast<std::size_t>(lens[r]);
  }
  // rows are contiguous and destinations ascend with them: no reordering
  std::vector<gidx> rlen = exchange(comm, lens, nrows, MPI_INT64_T, "row lengths");
  std::vector<gidx> col = exchange(comm, rows.col, nnz, MPI_INT64_T, "column indices");
  std::vector<double> val = exchange(comm, rows.val, nnz, MPI_DOUBLE, "values");
  RowBlock b;
  b.n = rows.n;
  b.first = starts[me];
  b.ptr.assign(rlen.size() + 1, 0);
  for (std::size_t r = 0; r < rlen.size(); ++r) b.ptr[r + 1] = b.ptr[r] + rlen[r];
  b.col = std::move(col);
  b.val = std::move(val);
  if (b.rows() != starts[me + 1] - starts[me]) throw locus::Error("spmv: redistribution lost rows");
  return b;
}

}  // namespace spmv
