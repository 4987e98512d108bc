//! One Parquet file of one table, written a row group at a time: rows are appended to
//! per-column buffers and flushed as a row group when the group is full (by rows or by
//! buffered bytes), so memory stays bounded however long the input is.
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, ZstdLevel};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;

use super::schema::{ColType, Column, Table};

/// Rows per row group at most.
pub const ROW_GROUP_ROWS: usize = 64 * 1024;
/// Buffered bytes that close a row group early (8 per value, strings by length plus
/// `STRING_OVERHEAD`).
pub const ROW_GROUP_BYTES: usize = 8 << 20;
/// What a buffered string costs beside its bytes (its `ByteArray` handle and allocation).
const STRING_OVERHEAD: usize = 48;

fn perr(e: parquet::errors::ParquetError) -> io::Error {
    io::Error::other(e)
}

/// The buffered values of one column (nulls are only in `defs`).
enum Values {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Str(Vec<ByteArray>),
}

impl Values {
    fn new(t: ColType) -> Self {
        match t {
            ColType::I32 => Values::I32(Vec::new()),
            ColType::I64 => Values::I64(Vec::new()),
            ColType::F64 => Values::F64(Vec::new()),
            ColType::Bool => Values::Bool(Vec::new()),
            ColType::Str => Values::Str(Vec::new()),
        }
    }
    fn clear(&mut self) {
        match self {
            Values::I32(v) => v.clear(),
            Values::I64(v) => v.clear(),
            Values::F64(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Str(v) => v.clear(),
        }
    }
}

struct Buffer {
    col: &'static Column,
    values: Values,
    /// Definition levels (1 present, 0 null) of an optional column.
    defs: Vec<i16>,
}

/// A value for one cell.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    /// No value (a null cell); only optional columns take it.
    Null,
    /// For an `int32` or `int64` column.
    I32(i32),
    /// For an `int64` column.
    I64(i64),
    /// For a `double` column.
    F64(f64),
    /// For a `boolean` column.
    Bool(bool),
    /// For a string column.
    Str(&'a str),
}

impl From<i32> for Cell<'_> {
    fn from(v: i32) -> Self {
        Cell::I32(v)
    }
}
impl From<i64> for Cell<'_> {
    fn from(v: i64) -> Self {
        Cell::I64(v)
    }
}
impl From<u32> for Cell<'_> {
    fn from(v: u32) -> Self {
        Cell::I64(i64::from(v))
    }
}
impl From<u64> for Cell<'_> {
    fn from(v: u64) -> Self {
        Cell::I64(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<usize> for Cell<'_> {
    fn from(v: usize) -> Self {
        Cell::I64(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<f64> for Cell<'_> {
    fn from(v: f64) -> Self {
        Cell::F64(v)
    }
}
impl From<f32> for Cell<'_> {
    fn from(v: f32) -> Self {
        Cell::F64(f64::from(v))
    }
}
impl From<bool> for Cell<'_> {
    fn from(v: bool) -> Self {
        Cell::Bool(v)
    }
}
impl<'a> From<&'a str> for Cell<'a> {
    fn from(v: &'a str) -> Self {
        Cell::Str(v)
    }
}
impl<'a, T: Into<Cell<'a>>> From<Option<T>> for Cell<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Null, Into::into)
    }
}

/// Writes one table's rows into one Parquet file.
pub struct TableWriter {
    table: &'static Table,
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    buffers: Vec<Buffer>,
    rows: usize,
    bytes: usize,
    /// Rows written to the file so far (flushed groups and the buffered one).
    pub total: u64,
}

impl TableWriter {
    /// Create `path` (the file of `table`) with the table's schema.
    pub fn create(table: &'static Table, path: &Path) -> io::Result<Self> {
        let schema = Arc::new(table.parquet_schema().map_err(perr)?);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_created_by(concat!("quakecap ", env!("CARGO_PKG_VERSION")).into())
            .build();
        let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let writer = SerializedFileWriter::new(file, schema, Arc::new(props)).map_err(perr)?;
        Ok(TableWriter {
            table,
            writer: Some(writer),
            buffers: table
                .columns
                .iter()
                .map(|col| Buffer {
                    col,
                    values: Values::new(col.ty),
                    defs: Vec::new(),
                })
                .collect(),
            rows: 0,
            bytes: 0,
            total: 0,
        })
    }

    /// Append one row: one cell per column, in the table's column order. A cell of the wrong
    /// type or a null in a required column is a bug in the row builder: it is refused whole
    /// (nothing of the row is kept).
    pub fn row(&mut self, cells: &[Cell<'_>]) -> io::Result<()> {
        if cells.len() != self.buffers.len() {
            return Err(io::Error::other(format!(
                "{}: row of {} cells for {} columns",
                self.table.name,
                cells.len(),
                self.buffers.len()
            )));
        }
        for (b, c) in self.buffers.iter().zip(cells) {
            let ok = matches!(
                (c, b.col.ty),
                (Cell::I32(_), ColType::I32 | ColType::I64)
                    | (Cell::I64(_), ColType::I64)
                    | (Cell::F64(_), ColType::F64)
                    | (Cell::Bool(_), ColType::Bool)
                    | (Cell::Str(_), ColType::Str)
            ) || matches!(c, Cell::Null) && b.col.nullable;
            if !ok {
                return Err(io::Error::other(format!(
                    "{}.{}: cell {c:?} does not fit the column",
                    self.table.name, b.col.name
                )));
            }
        }
        for (b, c) in self.buffers.iter_mut().zip(cells) {
            if b.col.nullable {
                b.defs.push(i16::from(!matches!(c, Cell::Null)));
            }
            match (&mut b.values, *c) {
                (Values::I32(v), Cell::I32(x)) => v.push(x),
                (Values::I64(v), Cell::I64(x)) => v.push(x),
                (Values::I64(v), Cell::I32(x)) => v.push(i64::from(x)),
                (Values::F64(v), Cell::F64(x)) => v.push(x),
                (Values::Bool(v), Cell::Bool(x)) => v.push(x),
                (Values::Str(v), Cell::Str(x)) => {
                    // The value's own allocation and its `ByteArray` handle.
                    self.bytes += x.len() + STRING_OVERHEAD;
                    v.push(ByteArray::from(x.as_bytes().to_vec()));
                }
                _ => {}
            }
            self.bytes += 8;
        }
        self.rows += 1;
        self.total += 1;
        if self.rows >= ROW_GROUP_ROWS || self.bytes >= ROW_GROUP_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Write the buffered rows as one row group.
    pub fn flush(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let Some(writer) = self.writer.as_mut() else {
            return Err(io::Error::other("table already closed"));
        };
        let mut rg = writer.next_row_group().map_err(perr)?;
        let mut i = 0;
        while let Some(mut col) = rg.next_column().map_err(perr)? {
            let Some(b) = self.buffers.get(i) else {
                return Err(io::Error::other("more columns than buffers"));
            };
            let defs = b.col.nullable.then_some(&b.defs[..]);
            match &b.values {
                Values::I32(v) => col.typed::<Int32Type>().write_batch(v, defs, None),
                Values::I64(v) => col.typed::<Int64Type>().write_batch(v, defs, None),
                Values::F64(v) => col.typed::<DoubleType>().write_batch(v, defs, None),
                Values::Bool(v) => col.typed::<BoolType>().write_batch(v, defs, None),
                Values::Str(v) => col.typed::<ByteArrayType>().write_batch(v, defs, None),
            }
            .map_err(perr)?;
            col.close().map_err(perr)?;
            i += 1;
        }
        rg.close().map_err(perr)?;
        for b in &mut self.buffers {
            b.values.clear();
            b.defs.clear();
        }
        self.rows = 0;
        self.bytes = 0;
        Ok(())
    }

    /// Flush what is buffered and write the footer; the file is complete after this.
    pub fn close(&mut self) -> io::Result<()> {
        self.flush()?;
        if let Some(w) = self.writer.take() {
            let mut inner = w.into_inner().map_err(perr)?;
            io::Write::flush(&mut inner)?;
            inner.get_ref().sync_all()?;
        }
        Ok(())
    }
}
